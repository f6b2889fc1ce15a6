"""ShareFetch and ShareAcknowledge v2 (Kafka 4.2+): KIP-1206's acquire modes and KIP-1222's
renewing acknowledgements, asked with exact request sequences."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from kgroup.conformance import observe
from kgroup.conformance.messages import request
from kgroup.conformance.scenarios import scenario
from kgroup.conformance.scenarios.share_raw import (
    ACCEPT,
    RELEASE,
    RawShareMember,
    delivered,
    member_a_joined,
)
from kgroup.conformance.target import Target

RENEW = 4
BATCH_OPTIMIZED, RECORD_LIMIT = 0, 1


def _batches(acks: list[tuple[int, int, int]]) -> list[dict[str, Any]]:
    return [{"first_offset": f, "last_offset": last, "acknowledge_types": [kind]} for f, last, kind in acks]


class V2Member(RawShareMember):
    """A share member speaking v2: its acquire mode, and renewals."""

    def fetch_v2(self, acks: list[tuple[int, int, int]], *, mode: int = BATCH_OPTIMIZED, max_records: int = 500,
                 max_wait_ms: int = 300, renew: bool = False, max_bytes: int = 1 << 20) -> Any:
        return request("ShareFetch", 2, group_id=self.group, member_id=self.member,
                       share_session_epoch=self.session_epoch, max_wait_ms=max_wait_ms,
                       min_bytes=0 if renew else 1, max_bytes=max_bytes, max_records=max_records,
                       batch_size=max_records, share_acquire_mode=mode, is_renew_ack=renew,
                       topics=[{"topic_id": self.topic_id, "partitions": [{
                           "partition_index": 0, "acknowledgement_batches": _batches(acks)}]}],
                       forgotten_topics_data=[])

    async def ask_fetch(self, label: str, req: Any, *, wait_for: int = 0, advances: bool = True) -> Any:
        """Send a v2 ShareFetch (again, off the transcript, until `wait_for` records come)."""
        for _ in range(40):
            r = await self.raw.call(req)
            if advances:
                self.session_epoch += 1
            got = delivered(r)
            if not wait_for or len(got["records"]) >= wait_for:
                break
            await asyncio.sleep(0.25)
            req = self.fetch_v2([], mode=int(req.share_acquire_mode), max_records=int(req.max_records))
        self.t.add(f"{label} (ShareFetch v2)", {"error_code": r.error_code, "error_message": r.error_message,
                                                "acquisition_lock_timeout": r.acquisition_lock_timeout, **got})
        return r

    async def acknowledge_v2(self, label: str, acks: list[tuple[int, int, int]], renew: bool = False,
                             version: int = 2) -> Any:
        fields = {"is_renew_ack": renew} if version >= 2 else {}
        r = await self.t.ask(self.raw, label, request(
            "ShareAcknowledge", version, group_id=self.group, member_id=self.member,
            share_session_epoch=self.session_epoch, topics=[{"topic_id": self.topic_id, "partitions": [{
                "partition_index": 0, "acknowledgement_batches": _batches(acks)}]}], **fields))
        self.session_epoch += 1
        return r


async def v2_member(t: Target, values: int, **configs: Any) -> tuple[Any, str, str, V2Member]:
    """Member A, speaking v2, joined and assigned the partition."""
    return await member_a_joined(t, values, V2Member, **configs)


@scenario("share", "KIP-1206 record-limit acquire mode",
          rule="a ShareFetch v2 in record-limit mode (ShareAcquireMode 1) acquires at most MaxRecords records, "
               "splitting a log batch; batch-optimized (0) finishes the batch it reaches MaxRecords in; an unknown "
               "mode fails the fetch (UNKNOWN_SERVER_ERROR)")
async def share_v2_acquire_record_limit(t: Target) -> None:
    raw, group, topic, a = await v2_member(t, values=5)
    await a.ask_fetch("record-limit, 2 records", a.fetch_v2([], mode=RECORD_LIMIT, max_records=2), wait_for=2)
    await a.ask_fetch("accept 0-1; record-limit, 2 more", a.fetch_v2([(0, 1, ACCEPT)], mode=RECORD_LIMIT,
                                                                      max_records=2), wait_for=2)
    await a.ask_fetch("accept 2-3; batch-optimized, 1 record", a.fetch_v2([(2, 3, ACCEPT)], mode=BATCH_OPTIMIZED,
                                                                          max_records=1), wait_for=1)
    await a.acknowledge_v2("accept the last", [(4, 4, ACCEPT)])
    await a.ask_fetch("an unknown acquire mode", a.fetch_v2([], mode=7, max_records=2))
    await a.close()


@scenario("share", "KIP-1222 renew keeps a record past its lock",
          rule="RENEW acknowledgements (ShareAcknowledge v2 with IsRenewAck) give the member a fresh lock of "
               "share.record.lock.duration.ms (here 2 s): renewed for 5 s the records are not delivered again "
               "and are then accepted in the same delivery; the answer carries the lock duration")
async def share_v2_renew_keeps_lock(t: Target) -> None:
    raw, group, topic, a = await v2_member(t, values=2, share_record_lock_duration_ms=2_000)
    await a.ask_fetch("first fetch", a.fetch_v2([]), wait_for=2)
    for i in range(10):
        await asyncio.sleep(0.5)
        await a.acknowledge_v2(f"renew {i + 1}", [(0, 1, RENEW)], renew=True)
    await a.ask_fetch("nothing to hand out: still held", a.fetch_v2([]))
    await a.acknowledge_v2("accept the same delivery", [(0, 1, ACCEPT)])
    await a.ask_fetch("nothing left", a.fetch_v2([]))
    await a.close()


@scenario("share", "KIP-1222 renew in a ShareFetch, and the requests refused",
          rule="a ShareFetch v2 with IsRenewAck must ask for nothing (MaxBytes, MinBytes, MaxRecords, MaxWaitMs 0, "
               "else INVALID_REQUEST), acknowledges and acquires nothing; RENEW without IsRenewAck is "
               "INVALID_REQUEST, as is type 4 in ShareAcknowledge v1")
async def share_v2_renew_fetch(t: Target) -> None:
    raw, group, topic, a = await v2_member(t, values=2, share_record_lock_duration_ms=5_000)
    await a.ask_fetch("first fetch", a.fetch_v2([]), wait_for=2)
    await a.ask_fetch("renew asking for records", a.fetch_v2([(0, 1, RENEW)], renew=True, max_records=5),
                      advances=False)
    await a.ask_fetch("renew in a ShareFetch", a.fetch_v2([(0, 1, RENEW)], renew=True, max_records=0,
                                                          max_wait_ms=0, max_bytes=0))
    await a.acknowledge_v2("RENEW without IsRenewAck", [(0, 0, RENEW)])
    await a.acknowledge_v2("RENEW in v1", [(0, 0, RENEW)], version=1)
    await a.acknowledge_v2("accept", [(0, 1, ACCEPT)])
    await a.close()


@scenario("share", "KIP-1222 renew disabled by the group config",
          rule="with share.renew.acknowledge.enable false a RENEW acknowledgement is refused "
               "(INVALID_RECORD_STATE) and changes nothing; the records are accepted after")
async def share_v2_renew_disabled(t: Target) -> None:
    raw, group, topic, a = await v2_member(t, values=2, share_renew_acknowledge_enable="false")
    await a.ask_fetch("first fetch", a.fetch_v2([]), wait_for=2)
    await a.acknowledge_v2("renew", [(0, 1, RENEW)], renew=True)
    await a.acknowledge_v2("accept", [(0, 1, ACCEPT)])
    await a.close()


@scenario("share", "KIP-1206 batch size: acquired ranges split at log batches",
          rule="batch-optimized, the records a ShareFetch acquires are listed in AcquiredRecords ranges cut at "
               "log batch boundaries once a range holds BatchSize records (here 2, batches of 2 and 3); released "
               "and redelivered, they keep those ranges")
async def share_v2_batch_size(t: Target) -> None:
    raw, group, topic, a = await v2_member(t, values=0)
    for first, n in ((0, 2), (2, 3), (5, 2), (7, 1)):
        await observe.produce(raw, topic, 0, [f"v{first + i}".encode() for i in range(n)])
    req = a.fetch_v2([], max_records=500)
    req = dataclasses.replace(req, batch_size=2)
    await a.ask_fetch("fetch, batch size 2", req, wait_for=8)
    await a.ask_fetch("release all and fetch again", dataclasses.replace(
        a.fetch_v2([(0, 7, RELEASE)], max_records=500), batch_size=2), wait_for=8)
    await a.acknowledge_v2("accept", [(0, 7, ACCEPT)])
    await a.close()
