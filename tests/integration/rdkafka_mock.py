"""librdkafka's mock cluster with several brokers, steered from Python.

A librdkafka handle configured with ``test.mock.num.brokers=N`` starts an in-process mock
Kafka cluster of N brokers (ids 1..N) on loopback. confluent-kafka does not expose the mock's
controls (which broker leads a partition or coordinates a group, a broker going down), but
the librdkafka library inside its wheel exports them (``rdkafka_mock.h``), so this module
makes its handle through ``ctypes`` and calls them directly.
"""

from __future__ import annotations

import ctypes
import glob
import os

import confluent_kafka

_RD_KAFKA_PRODUCER = 0
_CONF_OK = 0
_SYNC_GROUP = 14


def _library() -> ctypes.CDLL:
    """The librdkafka that confluent-kafka's wheel carries (the one it runs on)."""
    site = os.path.dirname(os.path.dirname(confluent_kafka.__file__))
    found = sorted(glob.glob(os.path.join(site, "confluent_kafka.libs", "librdkafka*.so*")))
    if not found:
        raise RuntimeError("the confluent-kafka wheel carries no librdkafka shared library")
    lib = ctypes.CDLL(found[0])
    p, i32, i16 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_int16
    signatures = {
        "rd_kafka_conf_new": ([], p),
        "rd_kafka_conf_set": ([p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                               ctypes.c_size_t], ctypes.c_int),
        "rd_kafka_new": ([ctypes.c_int, p, ctypes.c_char_p, ctypes.c_size_t], p),
        "rd_kafka_destroy": ([p], None),
        "rd_kafka_handle_mock_cluster": ([p], p),
        "rd_kafka_mock_cluster_bootstraps": ([p], ctypes.c_char_p),
        "rd_kafka_mock_topic_create": ([p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int],
                                       ctypes.c_int),
        "rd_kafka_mock_partition_set_leader": ([p, ctypes.c_char_p, i32, i32], ctypes.c_int),
        "rd_kafka_mock_coordinator_set": ([p, ctypes.c_char_p, ctypes.c_char_p, i32],
                                          ctypes.c_int),
        "rd_kafka_mock_broker_set_down": ([p, i32], ctypes.c_int),
        "rd_kafka_mock_broker_set_up": ([p, i32], ctypes.c_int),
        "rd_kafka_mock_push_request_errors_array": (
            [p, i16, ctypes.c_size_t, ctypes.POINTER(ctypes.c_int)], None),
        "rd_kafka_mock_set_apiversion": ([p, i16, i16, i16], ctypes.c_int),
        "rd_kafka_mock_start_request_tracking": ([p], None),
        "rd_kafka_mock_get_requests": ([p, ctypes.POINTER(ctypes.c_size_t)],
                                       ctypes.POINTER(p)),
        "rd_kafka_mock_request_id": ([p], i32),
        "rd_kafka_mock_request_api_key": ([p], i16),
        "rd_kafka_mock_request_destroy_array": ([ctypes.POINTER(p), ctypes.c_size_t], None),
        "rd_kafka_mock_clear_requests": ([p], None),
        "rd_kafka_mock_sharegroup_set_record_lock_duration": ([p, ctypes.c_int], None),
        "rd_kafka_mock_sharegroup_set_max_delivery_attempts": ([p, ctypes.c_int], None),
        "rd_kafka_mock_sharegroup_set_auto_offset_reset": ([p, ctypes.c_int], None),
        "rd_kafka_mock_sharegroup_set_session_timeout": ([p, ctypes.c_int], None),
        "rd_kafka_mock_sharegroup_set_heartbeat_interval": ([p, ctypes.c_int], None),
        "rd_kafka_mock_sharegroup_get_member_ids": (
            [p, ctypes.c_char_p, ctypes.POINTER(ctypes.POINTER(ctypes.c_char_p)),
             ctypes.POINTER(ctypes.c_size_t)], ctypes.c_int),
    }
    for name, (args, result) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes = args
        fn.restype = result
    return lib


class MockCluster:
    """A running mock cluster of ``brokers`` brokers; ``close()`` stops it."""

    def __init__(self, brokers: int = 3) -> None:
        self._lib = _library()
        err = ctypes.create_string_buffer(512)
        conf = self._lib.rd_kafka_conf_new()
        for key, value in (("test.mock.num.brokers", str(brokers)), ("log_level", "0")):
            if self._lib.rd_kafka_conf_set(conf, key.encode(), value.encode(), err,
                                           len(err)) != _CONF_OK:
                raise RuntimeError(f"librdkafka refused {key}={value}: {err.value.decode()}")
        self._rk = self._lib.rd_kafka_new(_RD_KAFKA_PRODUCER, conf, err, len(err))
        if not self._rk:
            raise RuntimeError(f"librdkafka could not start: {err.value.decode()}")
        self._mc = self._lib.rd_kafka_handle_mock_cluster(self._rk)
        self.bootstrap = self._lib.rd_kafka_mock_cluster_bootstraps(self._mc).decode()
        # The mock advertises SyncGroup v4 but reads its (flexible) assignments array count
        # as an int32: depending on the bytes that follow it drops the connection (clients
        # then retry at v3) or crashes the process. librdkafka itself sends v3 at most.
        self.set_versions(_SYNC_GROUP, 0, 3)

    def _ok(self, code: int, what: str) -> None:
        if code:
            raise RuntimeError(f"mock cluster: {what} failed with librdkafka error {code}")

    def create_topic(self, topic: str, partitions: int) -> None:
        self._ok(self._lib.rd_kafka_mock_topic_create(self._mc, topic.encode(), partitions, 1),
                 f"create topic {topic}")

    def set_leader(self, topic: str, partition: int, broker: int) -> None:
        self._ok(self._lib.rd_kafka_mock_partition_set_leader(self._mc, topic.encode(),
                                                              partition, broker),
                 f"move {topic}-{partition} to broker {broker}")

    def set_coordinator(self, group: str, broker: int) -> None:
        self._ok(self._lib.rd_kafka_mock_coordinator_set(self._mc, b"group", group.encode(),
                                                         broker),
                 f"move group {group} to broker {broker}")

    def broker_down(self, broker: int) -> None:
        """Close the broker's connections and refuse new ones."""
        self._ok(self._lib.rd_kafka_mock_broker_set_down(self._mc, broker), "broker down")

    def broker_up(self, broker: int) -> None:
        self._ok(self._lib.rd_kafka_mock_broker_set_up(self._mc, broker), "broker up")

    def set_versions(self, api_key: int, low: int, high: int) -> None:
        """Serve (and advertise) only versions ``low``..``high`` of ``api_key``."""
        self._ok(self._lib.rd_kafka_mock_set_apiversion(self._mc, api_key, low, high),
                 f"versions of API {api_key}")

    def push_errors(self, api_key: int, *codes: int) -> None:
        """The next requests of ``api_key`` (to any broker) get these error codes."""
        array = (ctypes.c_int * len(codes))(*codes)
        self._lib.rd_kafka_mock_push_request_errors_array(self._mc, api_key, len(codes), array)

    def track_requests(self) -> None:
        """From now on, remember which broker got each request (see ``requests``)."""
        self._lib.rd_kafka_mock_start_request_tracking(self._mc)

    def requests(self, *, clear: bool = False) -> list[tuple[int, int]]:
        """(broker id, api key) of every request since tracking started (or was cleared)."""
        count = ctypes.c_size_t(0)
        array = self._lib.rd_kafka_mock_get_requests(self._mc, ctypes.byref(count))
        out = [(int(self._lib.rd_kafka_mock_request_id(array[i])),
                int(self._lib.rd_kafka_mock_request_api_key(array[i])))
               for i in range(count.value)]
        if count.value:
            self._lib.rd_kafka_mock_request_destroy_array(array, count)
        if clear:
            self._lib.rd_kafka_mock_clear_requests(self._mc)
        return out

    def brokers_for(self, api_key: int) -> set[int]:
        """The brokers that got a request of ``api_key`` since tracking started."""
        return {broker for broker, api in self.requests() if api == api_key}

    def share_groups(self, *, record_lock_ms: int, delivery_limit: int, earliest: bool,
                     session_timeout_ms: int | None = None, heartbeat_interval_ms: int | None = None) -> None:
        """Settings of every share group of the mock (as the TOML's [group] share_* keys)."""
        self._lib.rd_kafka_mock_sharegroup_set_record_lock_duration(self._mc, record_lock_ms)
        if session_timeout_ms is not None:
            self._lib.rd_kafka_mock_sharegroup_set_session_timeout(self._mc, session_timeout_ms)
        if heartbeat_interval_ms is not None:
            self._lib.rd_kafka_mock_sharegroup_set_heartbeat_interval(self._mc, heartbeat_interval_ms)
        self._lib.rd_kafka_mock_sharegroup_set_max_delivery_attempts(self._mc, delivery_limit)
        self._lib.rd_kafka_mock_sharegroup_set_auto_offset_reset(self._mc, 1 if earliest else 0)

    def share_members(self, group: str) -> int:
        """How many members the share group has (0 if it does not exist)."""
        ids = ctypes.POINTER(ctypes.c_char_p)()
        count = ctypes.c_size_t(0)
        if self._lib.rd_kafka_mock_sharegroup_get_member_ids(self._mc, group.encode(), ctypes.byref(ids),
                                                             ctypes.byref(count)):
            return 0
        return count.value  # (the id strings are left to the process: a few bytes per test)

    def close(self) -> None:
        if self._rk:
            self._lib.rd_kafka_destroy(self._rk)
            self._rk = None
