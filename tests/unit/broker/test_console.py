"""The console's HTTP listener over a real shard and data dir, in one process: the JSON API,
/metrics (parsed by prometheus_client's own parser), the live stream, and what it refuses.
The same observer logs group changes with the event topic off (`--no-group-events`)."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging

from prometheus_client.parser import text_string_to_metric_families

from kgroup.broker.observe.console.app import Console
from kgroup.broker.durability import Durability
from kgroup.broker.observe.event_stream import GroupEventStream
from kgroup.broker.observe.group_observer import GroupObserver
from kgroup.broker.observe.group_view import GroupViews
from kgroup.broker.observe.request_stats import FSYNC_BUCKETS, Buckets, RequestStats
from kgroup.broker.groups.shard import Shard
from kgroup.core.config import GroupConfig
from kgroup.core.messages import OffsetCommitPartition, OffsetCommitRequest, SyncGroupRequest
from kgroup.core.state import counter_member_ids
from kgroup.storage import DataDir, FsyncPolicy
from kgroup.wire.record_batch import build_batch
from tests.unit.broker.test_event_stream import join_request, settle


async def http(port: int, raw: bytes) -> tuple[int, dict[str, str], bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    data = await asyncio.wait_for(reader.read(), 10)
    writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


async def get(port: int, path: str) -> tuple[int, dict[str, str], bytes]:
    return await http(port, f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())


class Rig:
    """A shard with the event stream (topic writing off) and the console on a free port."""

    async def start(self, tmp_path) -> "Rig":
        self.data = DataDir(tmp_path / "d", metadata_partitions=1)
        self.data.create_topic("orders", 2)
        self.durability = Durability(FsyncPolicy.parse("never"), Buckets(FSYNC_BUCKETS))
        self.durability.start()
        self.shard = Shard(0, self.data.metadata_log.partition(0), GroupConfig(initial_rebalance_delay_ms=0),
                           self.durability, counter_member_ids())
        self.observer = GroupObserver()
        self.shard.events = GroupEventStream(self.data, self.durability, write=False, observer=self.observer)
        self.shard.coordinator.shard.topics = {n: (str(m.topic_id), m.partitions) for n, m in self.data.topics().items()}
        self.shard.load()

        def end(topic, p):
            try:
                return self.data.partition_log(topic, p).log_end_offset
            except Exception:
                return None
        self.console = Console(GroupViews(lambda: [self.shard.coordinator]), self.observer, RequestStats(),
                               self.durability.fsync_seconds, end)
        _, self.port = await self.console.start("127.0.0.1", 0)
        return self

    async def join_and_sync(self, client="c"):
        request = dataclasses.replace(join_request("g"), client_id=client)
        parked = asyncio.ensure_future(self.shard.call(self.shard.coordinator.join_group, request))
        await asyncio.sleep(0.05)
        joined = await parked
        await self.shard.call(self.shard.coordinator.sync_group, SyncGroupRequest(
            "g", joined.generation_id, joined.member_id, assignments=((joined.member_id, b""),)))
        await settle()
        return joined

    async def stop(self):
        await self.console.close()
        self.shard.close()
        await self.durability.close()
        self.data.close()


def test_the_api_and_metrics_show_a_group_its_lag_and_its_rebalances(tmp_path, caplog):
    caplog.set_level(logging.INFO, "kgroup.broker.groups")

    async def go():
        rig = await Rig().start(tmp_path)
        status, _, body = await get(rig.port, "/api/groups")
        assert status == 200 and json.loads(body)["groups"] == []
        joined = await rig.join_and_sync()
        rig.data.partition_log("orders", 0).append(build_batch([(None, b"x", (), 0)] * 10))
        await rig.shard.call(rig.shard.coordinator.commit_offsets, OffsetCommitRequest(
            "g", joined.generation_id, joined.member_id, (OffsetCommitPartition("orders", 0, 4),)))

        status, _, body = await get(rig.port, "/api/groups")
        (g,) = json.loads(body)["groups"]
        assert (g["group"], g["kind"], g["state"], g["members"], g["lag"], g["rebalances"]) == \
            ("g", "classic", "Stable", 1, 6, 1)
        status, headers, body = await get(rig.port, "/api/groups/g")
        d = json.loads(body)
        assert status == 200 and headers["Content-Type"] == "application/json"
        assert [m["member_id"] for m in d["members"]] == [joined.member_id]
        assert d["partitions"] == [{"topic": "orders", "partition": 0, "owner": None, "committed": 4, "end": 10,
                                    "lag": 6}]
        assert [r["generation"] for r in d["rebalances"]] == [1] and d["rebalances"][0]["cause"] == "member_joined"
        status, _, body = await get(rig.port, "/api/groups/nope")
        assert status == 404 and "nope" in json.loads(body)["error"]

        status, headers, body = await get(rig.port, "/metrics")
        assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
        families = {f.name: f for f in text_string_to_metric_families(body.decode())}
        samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in families.values() for s in f.samples}
        assert samples[("kgroup_groups", (("kind", "classic"), ("state", "Stable")))] == 1
        assert samples[("kgroup_group_members", (("group", "g"), ("kind", "classic")))] == 1
        assert samples[("kgroup_rebalances_total", (("group", "g"),))] == 1
        assert samples[("kgroup_group_lag", (("group", "g"), ("partition", "0"), ("topic", "orders")))] == 6
        assert samples[("kgroup_rebalance_duration_seconds_count", (("kind", "classic"),))] == 1
        assert "process_cpu_seconds" in families
        await rig.stop()

    asyncio.run(go())
    # The event topic was off (write=False): the group log still has the join and the rebalance.
    messages = [r.getMessage() for r in caplog.records if r.name == "kgroup.broker.groups"]
    assert messages[0].startswith("group g: member c-1 joined (client id c, host /127.0.0.1)")
    assert any(m.startswith("group g: rebalance completed (generation 1,") for m in messages)


def test_the_live_stream_pushes_a_change_without_being_asked(tmp_path):
    async def go():
        rig = await Rig().start(tmp_path)
        reader, writer = await asyncio.open_connection("127.0.0.1", rig.port)
        writer.write(b"GET /api/stream?group=g HTTP/1.1\r\nHost: x\r\n\r\n")
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        assert b"200 OK" in head and b"text/event-stream" in head

        async def message(kind: str) -> dict:
            while True:
                block = (await asyncio.wait_for(reader.readuntil(b"\n\n"), 10)).decode()
                if block.startswith(f"event: {kind}\n"):
                    return json.loads(block.split("data: ", 1)[1])

        assert (await message("groups"))["groups"] == []
        assert (await message("group")) == {"group": "g", "gone": True}
        joined = await rig.join_and_sync()
        listing = await message("groups")
        assert [g["group"] for g in listing["groups"]] == ["g"]
        detail = await message("group")
        assert [m["member_id"] for m in detail["members"]] == [joined.member_id] and detail["state"] == "Stable"
        assert rig.console.live.clients
        writer.close()
        for _ in range(100):
            if not rig.console.live.clients:
                break
            await asyncio.sleep(0.01)
        assert not rig.console.live.clients              # a closed page is forgotten
        await rig.stop()

    asyncio.run(go())


def test_it_serves_its_own_page_and_refuses_writes_bad_requests_and_other_paths(tmp_path):
    async def go():
        rig = await Rig().start(tmp_path)
        status, headers, body = await get(rig.port, "/")
        assert status == 200 and headers["Content-Type"].startswith("text/html") and b"/console.js" in body
        assert b"http://" not in body and b"https://" not in body          # nothing from elsewhere
        status, _, js = await get(rig.port, "/console.js")
        assert status == 200 and b"EventSource" in js and b"innerHTML" not in js
        assert (await get(rig.port, "/../../etc/passwd"))[0] == 404
        assert (await get(rig.port, "/static/console.js"))[0] == 404
        status, headers, _ = await http(rig.port, b"PUT /api/groups HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
        assert status == 405 and headers["Allow"] == "GET, HEAD, POST"
        # POST is for actions on a group only; this console has no request path: read-only.
        assert (await http(rig.port, b"POST /api/groups HTTP/1.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"))[0] == 404
        status, _, body = await http(rig.port, b"POST /api/groups/g/delete HTTP/1.1\r\nContent-Length: 0\r\n"
                                     b"Connection: close\r\n\r\n")
        assert status == 405 and b"read-only" in body
        assert (await http(rig.port, b"NONSENSE\r\n\r\n"))[0] == 400
        assert (await http(rig.port, b"GET / HTTP/1.1\r\nContent-Length: lots\r\n\r\n"))[0] == 400
        assert (await http(rig.port, b"GET / SPDY/9\r\n\r\n"))[0] == 400
        assert (await http(rig.port, b"GET / HTTP/1.1\r\nX: " + b"a" * 20_000 + b"\r\n\r\n"))[0] == 431
        # ... and still serves afterwards.
        assert (await get(rig.port, "/api/groups"))[0] == 200
        await rig.stop()

    asyncio.run(go())


def test_kip1191_a_share_groups_page_names_its_dead_letter_topic(tmp_path):
    from kgroup.core.group_configs import AlterGroupConfigsRequest
    from kgroup.core.share_messages import ShareGroupHeartbeatRequest

    async def go():
        rig = await Rig().start(tmp_path)
        try:
            await rig.shard.call(rig.shard.coordinator.share_group_heartbeat, ShareGroupHeartbeatRequest(
                "s", "m-1", 0, subscribed_topic_names=("orders",)))
            await settle()
            status, _, body = await get(rig.port, "/api/groups/s")
            assert status == 200 and json.loads(body)["dead_letter_topic"] is None
            await rig.shard.call(rig.shard.coordinator.alter_group_configs, AlterGroupConfigsRequest(
                "s", (("errors.deadletterqueue.topic.name", 0, "dlq.s"),)))
            status, _, body = await get(rig.port, "/api/groups/s")
            assert json.loads(body)["dead_letter_topic"] == "dlq.s"
        finally:
            await rig.stop()

    asyncio.run(go())
