"""The share-partition leader's side of the persister on another node (broker/share/
remote_share_state.py): its Read/WriteShareGroupState carry the leader epoch the leader
loaded the partition at, so the share coordinator can fence a leader another node has
replaced, and that refusal (FENCED_LEADER_EPOCH) is final, not retried."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from kgroup.broker.share.remote_share_state import RemoteShareState
from kgroup.core.errors import ErrorCode, GroupError
from kgroup.core.records import ShareStateValue

TOPIC_ID = "5f2b1c36-6b1e-4a8e-9d43-0c1f3f6a7e11"


class Peers:
    """Node 1 as the share coordinator: every request recorded, answered with `code`."""

    node_id = 0

    def __init__(self, code: ErrorCode = ErrorCode.NONE) -> None:
        self.code, self.sent = code, []

    async def request(self, node: int, api_key, request):
        self.sent.append((node, api_key, request))
        part = SimpleNamespace(error_code=int(self.code), error_message=self.code.name, state_epoch=0,
                               start_offset=5, state_batches=())
        return SimpleNamespace(results=[SimpleNamespace(partitions=[part])])


async def _local():
    raise AssertionError("the coordinator is on node 1, not here")


def _sent_epochs(peers: Peers) -> list[int]:
    return [int(r.topics[0].partitions[0].leader_epoch) for _, _, r in peers.sent]


def test_reads_and_writes_carry_the_partitions_leader_epoch():
    async def scenario():
        peers = Peers()
        remote = RemoteShareState(peers, lambda group: 1)
        assert await remote.read("sg", TOPIC_ID, 0, 7) == ShareStateValue(0, 5)
        await remote.write("sg", TOPIC_ID, 0, ShareStateValue(0, 6), 7, _local)
        return _sent_epochs(peers)

    assert asyncio.run(scenario()) == [7, 7]


def test_a_fenced_leader_epoch_is_final():
    async def scenario():
        peers = Peers(ErrorCode.FENCED_LEADER_EPOCH)
        remote = RemoteShareState(peers, lambda group: 1)
        with pytest.raises(GroupError) as raised:
            await remote.write("sg", TOPIC_ID, 0, ShareStateValue(0, 6), 3, _local)
        return raised.value.code, len(peers.sent)

    assert asyncio.run(scenario()) == (ErrorCode.FENCED_LEADER_EPOCH, 1)
