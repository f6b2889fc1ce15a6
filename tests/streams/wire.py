"""A small synchronous Kafka client for the streams scenarios: any request, any version, to a
broker or to a group's coordinator, as kio objects (the same bytes on kgroup and Kafka 4.4).

    with Wire(bootstrap) as w:
        described = w.describe_streams_group("app")      # StreamsGroupDescribe v1
        w.coordinator_call("app", 88, 1, group_id=..., ...)
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

from kgroup.wire.codec import decode_response, encode_request, request_class
from kgroup.wire.kio_build import build, item
from tests.integration.waits import pace

FIND_COORDINATOR, STREAMS_HEARTBEAT, STREAMS_DESCRIBE, INCREMENTAL_ALTER_CONFIGS = 10, 88, 89, 44
GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP
# COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
_RETRIABLE = {14, 15, 16}


class Wire:
    def __init__(self, bootstrap: str, client_id: str = "kgroup-streams-test") -> None:
        # A cluster's bootstrap lists every node: a node that is down passes to the next.
        self.bootstraps = [(h, int(p)) for h, p in (b.rsplit(":", 1) for b in bootstrap.split(","))]
        self.bootstrap = self.bootstraps[0]
        self.client_id = client_id
        self._sockets: dict[tuple[str, int], socket.socket] = {}
        self._correlation = 0
        self._coordinators: dict[str, tuple[str, int]] = {}

    def _passed(self, address: tuple[str, int]) -> None:
        """`address` failed: if it is the bootstrap node, the next node is."""
        if address == self.bootstrap and len(self.bootstraps) > 1:
            self.bootstraps.append(self.bootstraps.pop(0))
            self.bootstrap = self.bootstraps[0]

    def _socket(self, address: tuple[str, int]) -> socket.socket:
        sock = self._sockets.get(address)
        if sock is None:
            sock = self._sockets[address] = socket.create_connection(address, timeout=30)
        return sock

    def call(self, address: tuple[str, int] | None, api_key: int, version: int, /, **fields: Any) -> Any:
        """One request to `address` (None: the bootstrap broker); its decoded response."""
        address = address or self.bootstrap
        self._correlation += 1
        request = build(request_class(api_key, version), **fields)
        frame = encode_request(api_key, version, self._correlation, self.client_id, request)
        try:
            sock = self._socket(address)
        except OSError:
            self._passed(address)
            raise
        try:
            sock.sendall(frame)
            size = struct.unpack(">i", _read(sock, 4))[0]
            payload = _read(sock, size)
        except OSError:
            self._sockets.pop(address, None)
            sock.close()
            self._passed(address)
            raise
        correlation, response = decode_response(api_key, version, payload)
        assert correlation == self._correlation
        return response

    def coordinator(self, group_id: str, refresh: bool = False) -> tuple[str, int]:
        if refresh or group_id not in self._coordinators:
            deadline = time.monotonic() + 30
            while True:
                r = self.call(None, FIND_COORDINATOR, 4, key_type=0, coordinator_keys=(group_id,))
                (c,) = r.coordinators
                if int(c.error_code) == 0:
                    break
                # Kafka answers COORDINATOR_NOT_AVAILABLE while it creates __consumer_offsets.
                if int(c.error_code) not in _RETRIABLE or time.monotonic() > deadline:
                    raise RuntimeError(f"FindCoordinator {group_id}: {c.error_code}")
                pace(0.1)
            self._coordinators[group_id] = (c.host, c.port)
        return self._coordinators[group_id]

    def coordinator_call(self, group: str, api_key: int, version: int, /, **fields: Any) -> Any:
        """A request to `group`'s coordinator; retried, as clients retry, while the coordinator
        is loading, moving or not yet there (a top-level error code 14, 15 or 16)."""
        # Positional-only: the request's own fields include `group_id`.
        deadline = time.monotonic() + 30
        while True:
            try:
                r = self.call(self.coordinator(group), api_key, version, **fields)
            except OSError:
                r = self.call(self.coordinator(group, refresh=True), api_key, version, **fields)
            code = int(getattr(r, "error_code", 0) or 0)
            if code not in _RETRIABLE or time.monotonic() > deadline:
                return r
            self.coordinator(group, refresh=True)
            pace(0.1)

    def describe_streams_group(self, group_id: str, version: int = 1) -> Any:
        """The group as StreamsGroupDescribe answers it (its `groups[0]`)."""
        r = self.coordinator_call(group_id, STREAMS_DESCRIBE, version, group_ids=(group_id,),
                                  include_authorized_operations=False)
        return r.groups[0]

    def alter_group_configs(self, group_id: str, *, to_coordinator: bool = False, **configs: Any) -> None:
        """IncrementalAlterConfigs v1 SETs on the GROUP resource `group_id` (`streams_x_y`
        names streams.x.y), to the bootstrap broker or (`to_coordinator`) the group's
        coordinator; every resource must be answered NONE."""
        cls = request_class(INCREMENTAL_ALTER_CONFIGS, 1)
        res_cls = item(cls, "resources")
        cfg_cls = item(res_cls, "configs")
        address = self.coordinator(group_id) if to_coordinator else None
        r = self.call(address, INCREMENTAL_ALTER_CONFIGS, 1, validate_only=False, resources=(build(
            res_cls, resource_type=GROUP_RESOURCE, resource_name=group_id,
            configs=tuple(build(cfg_cls, name=k.replace("_", "."), config_operation=0, value=str(v))
                          for k, v in configs.items())),))
        assert [int(x.error_code) for x in r.responses] == [0], r

    def close(self) -> None:
        for sock in self._sockets.values():
            sock.close()
        self._sockets.clear()

    def __enter__(self) -> "Wire":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _read(sock: socket.socket, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError("connection closed")
        out += chunk
    return out


def tasks_of(assignment: Any, kind: str = "active_tasks") -> set[str]:
    """A described member's tasks of one kind as "subtopology_partition" strings."""
    return {f"{t.subtopology_id}_{p}" for t in getattr(assignment, kind) for p in t.partitions}

