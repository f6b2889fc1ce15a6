"""Raw-protocol classic group members for the broker benchmarks (not a benchmark itself).

A `Member` owns one `kgroup.client.connection.Connection` (requests on one connection are
answered in order, and a JoinGroup parks until the rebalance completes, so every member
needs its own). `build_group` brings N members to Stable: each runs join -> sync, the
leader assigns, and anyone told REBALANCE_IN_PROGRESS rejoins, until all N members hold a
SyncGroup answer for one generation whose leader saw N members.

Versions: JoinGroup v5, SyncGroup v3, Heartbeat v3 (non-flexible, known to kgroup and to
Tansu 0.6), with the two-step join (MEMBER_ID_REQUIRED) handled for brokers that use it.
"""

from __future__ import annotations

import asyncio
import struct
import time

from peers import ROOT  # noqa: F401  (puts src/ on sys.path)

from kgroup.wire.kio_build import build, item
from kgroup.client.connection import Connection
from kgroup.wire import request_class

JOIN, HEARTBEAT, SYNC, LEAVE, FIND_COORDINATOR, DESCRIBE_GROUPS = 11, 12, 14, 13, 10, 15
JOIN_V, SYNC_V, HB_V = 5, 3, 3
NONE, REBALANCE_IN_PROGRESS, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, MEMBER_ID_REQUIRED = 0, 27, 25, 22, 79

JoinReq = request_class(JOIN, JOIN_V)
SyncReq = request_class(SYNC, SYNC_V)
HbReq = request_class(HEARTBEAT, HB_V)
JoinProtocol = item(JoinReq, "protocols")
SyncAssignment = item(SyncReq, "assignments")

# ConsumerProtocol subscription v0 for topic "bench" (version, topics, user data)
SUBSCRIPTION = struct.pack(">hi h5s i", 0, 1, 5, b"bench", -1)
ASSIGNMENT = struct.pack(">hi h5s i i i", 0, 1, 5, b"bench", 1, 0, -1)


def assignment(partitions: list[int]) -> bytes:
    """ConsumerProtocol assignment v0 of these partitions of topic "bench"."""
    return (struct.pack(">hi h5s i", 0, 1, 5, b"bench", len(partitions))
            + struct.pack(f">{len(partitions)}i", *partitions) + struct.pack(">i", -1))


class Member:
    def __init__(self, conn: Connection, group: str, session_ms: int = 30_000,
                 rebalance_ms: int = 60_000, partitions: int = 0) -> None:
        self.conn = conn
        self.group = group
        self.member_id = ""
        self.generation = -1
        self.leader = False
        self.members_seen = 0
        self.synced_generation = -1
        self.session_ms = session_ms
        self.rebalance_ms = rebalance_ms
        # partitions > 0: the leader deals partitions 0..P-1 of "bench" round robin over the
        # members (else every member gets partition 0); synced_at: when the last SyncGroup
        # answer without error came (perf_counter)
        self.partitions = partitions
        self.synced_at = 0.0

    @classmethod
    async def open(cls, host: str, port: int, group: str, **kw) -> Member:
        conn = await Connection.open(host, port, client_id="kgroup-bench", timeout=120)
        return cls(conn, group, **kw)

    def join_request(self):
        return build(JoinReq, group_id=self.group, session_timeout=self.session_ms,
                     rebalance_timeout=self.rebalance_ms, member_id=self.member_id,
                     group_instance_id=None, protocol_type="consumer",
                     protocols=(build(JoinProtocol, name="range", metadata=SUBSCRIPTION),))

    async def join(self) -> int:
        """JoinGroup until a non-MEMBER_ID_REQUIRED answer; returns its error code."""
        while True:
            resp = await self.conn.request(JOIN, self.join_request())
            err = int(resp.error_code)
            if err == MEMBER_ID_REQUIRED:
                self.member_id = resp.member_id
                continue
            if err == UNKNOWN_MEMBER_ID:
                self.member_id = ""
                continue
            if err != NONE:
                return err
            self.member_id = resp.member_id
            self.generation = int(resp.generation_id)
            self.leader = resp.leader == resp.member_id
            self.members_seen = len(resp.members) if self.leader else 0
            self._join_members = [m.member_id for m in resp.members] if self.leader else []
            return err

    def sync_request(self):
        if not self.leader:
            assignments = ()
        elif self.partitions:
            n = len(self._join_members)
            assignments = tuple(build(SyncAssignment, member_id=mid,
                                      assignment=assignment(list(range(i, self.partitions, n))))
                                for i, mid in enumerate(self._join_members))
        else:
            assignments = tuple(build(SyncAssignment, member_id=mid, assignment=ASSIGNMENT)
                                for mid in self._join_members)
        return build(SyncReq, group_id=self.group, generation_id=self.generation,
                     member_id=self.member_id, group_instance_id=None,
                     protocol_type="consumer", protocol_name="range", assignments=assignments)

    async def sync(self) -> int:
        resp = await self.conn.request(SYNC, self.sync_request())
        err = int(resp.error_code)
        if err == NONE:
            self.synced_generation = self.generation
            self.synced_at = time.perf_counter()
        return err

    def heartbeat_request(self):
        return build(HbReq, group_id=self.group, generation_id=self.generation,
                     member_id=self.member_id, group_instance_id=None)

    async def heartbeat(self) -> int:
        resp = await self.conn.request(HEARTBEAT, self.heartbeat_request())
        return int(resp.error_code)

    async def close(self) -> None:
        await self.conn.close()


async def coordinator_ready(conn: Connection, group: str, timeout: float = 60.0) -> None:
    """FindCoordinator for `group` until the broker names one: Apache Kafka creates its
    `__consumer_offsets` on the first FindCoordinator and answers NOT_COORDINATOR to group
    requests until its partitions are loaded (a single node is every group's coordinator,
    so the members' connections stay as they are)."""
    cls = request_class(FIND_COORDINATOR, 4)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        resp = await conn.request(FIND_COORDINATOR, build(cls, key="", key_type=0, coordinator_keys=(group,)))
        code = int(resp.coordinators[0].error_code)
        if code == NONE:
            # and until the group's partition is loaded (DescribeGroups answers the group)
            describe = await conn.request(DESCRIBE_GROUPS, build(request_class(DESCRIBE_GROUPS, 5), groups=(group,),
                                                                 include_authorized_operations=False))
            code = int(describe.groups[0].error_code)
            if code == NONE:
                return
        if loop.time() > deadline:
            raise RuntimeError(f"no coordinator for {group} after {timeout}s (last error code {code})")
        await asyncio.sleep(0.1)


async def _member_loop(m: Member, stop: asyncio.Event, interval: float) -> None:
    need_join = True
    while not stop.is_set():
        if need_join:
            err = await m.join()
            if err != NONE:
                await asyncio.sleep(0.05)
                continue
            err = await m.sync()
            need_join = err != NONE
            continue
        try:
            await asyncio.wait_for(stop.wait(), interval)
            return
        except asyncio.TimeoutError:
            pass
        err = await m.heartbeat()
        if err != NONE:
            need_join = True


async def build_group(host: str, port: int, group: str, n: int, interval: float = 0.2,
                      timeout: float = 180.0, conns: list[Connection] | None = None, **kw) -> list[Member]:
    """N members of `group`, Stable, each with its own connection (or member i on `conns[i]`,
    connections the caller keeps open and may reuse for the next group); heartbeats stopped."""
    if conns is not None:
        members = [Member(conn, group, **kw) for conn in conns[:n]]
    else:
        members = list(await asyncio.gather(*(Member.open(host, port, group, **kw) for _ in range(n))))
    await coordinator_ready(members[0].conn, group)
    return await stabilize(members, group, interval, timeout)


async def stabilize(members: list[Member], group: str, interval: float = 0.2,
                    timeout: float = 180.0) -> list[Member]:
    """Run the members (join, sync, heartbeat every `interval` s, rejoin when told) until
    all hold a SyncGroup answer for one generation whose leader saw them all; then stop."""
    n = len(members)
    stop = asyncio.Event()
    tasks = [asyncio.create_task(_member_loop(m, stop, interval)) for m in members]
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    try:
        while True:
            gens = {m.synced_generation for m in members}
            leaders = [m for m in members if m.leader and m.generation in gens]
            if (len(gens) == 1 and -1 not in gens and len(leaders) == 1
                    and leaders[0].members_seen == n and all(m.generation == m.synced_generation for m in members)):
                break
            if loop.time() > deadline:
                raise RuntimeError(f"group {group} of {n} not stable after {timeout}s: gens={sorted(gens)}")
            for t in tasks:
                if t.done() and t.exception():
                    raise t.exception()
            await asyncio.sleep(0.02)
    finally:
        stop.set()
        await asyncio.gather(*tasks, return_exceptions=True)
    return members


_FRAME_LEN = struct.Struct(">i")
_ERROR_CODE = struct.Struct(">h")


async def pipeline(host: str, port: int, frames: list[bytes], window: int, seconds: float,
                   counts: dict, start: asyncio.Event, error_at: int) -> None:
    """Keep `window` pre-encoded requests in flight on one connection for `seconds`.

    Each response's int16 error code sits `error_at` bytes into its frame (size prefix
    included); successes go to counts["ok"], failures to counts["bad"] and, by code, to
    counts["codes"].
    """
    reader, writer = await asyncio.open_connection(host, port)
    nframes = len(frames)
    nxt = 0

    def send(k: int) -> None:
        nonlocal nxt
        out = []
        for _ in range(k):
            out.append(frames[nxt])
            nxt = nxt + 1 if nxt + 1 < nframes else 0
        writer.write(b"".join(out))

    await start.wait()
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    send(window)
    buf = b""
    ok = bad = 0
    codes: dict[int, int] = {}
    in_flight = window
    sending = True
    try:
        while in_flight:
            data = await reader.read(1 << 16)
            if not data:
                raise ConnectionError("broker closed a benchmark connection")
            buf = buf + data if buf else data
            pos = 0
            got = 0
            n = len(buf)
            while n - pos >= 4:
                (size,) = _FRAME_LEN.unpack_from(buf, pos)
                if n - pos - 4 < size:
                    break
                code = _ERROR_CODE.unpack_from(buf, pos + error_at)[0]
                if code == 0:
                    ok += 1
                else:
                    bad += 1
                    codes[code] = codes.get(code, 0) + 1
                pos += 4 + size
                got += 1
            buf = buf[pos:]
            in_flight -= got
            if sending and loop.time() >= end:
                sending = False
            if sending and got:
                send(got)
                in_flight += got
    finally:
        counts["ok"] = counts.get("ok", 0) + ok
        counts["bad"] = counts.get("bad", 0) + bad
        merged = counts.setdefault("codes", {})
        for c, k in codes.items():
            merged[c] = merged.get(c, 0) + k
        writer.close()
