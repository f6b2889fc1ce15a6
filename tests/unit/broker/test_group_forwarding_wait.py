"""A group config request waits for a moving, loading or unreachable coordinator
(admin/group_forwarding.py).

Kafka 4.4 keeps group configs in KRaft and never answers COORDINATOR_LOAD_IN_PROGRESS to a
config request; its Admin client does not retry an error given per resource. So a kgroup node
waits, within a bound, for the group's partition to get an owner and be loaded, and answers
COORDINATOR_LOAD_IN_PROGRESS only when that lasts past the bound.
"""

from __future__ import annotations

import asyncio
import dataclasses

import pytest

from kgroup.broker.admin.group_forwarding import (LOAD_WAIT_S, PEER_CLIENT_PREFIX, PEER_LOAD_WAIT_S,
                                                  GroupForwarding)
from kgroup.broker.cluster.peers import PEER_TIMEOUT_S
from kgroup.broker.groups.group_api import GroupApi
from kgroup.error_codes import ErrorCode
from kgroup.wire import RequestHeader


class Refused(Exception):
    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class LoadedShard:
    loaded = True


class MovingCluster:
    """One group-metadata partition that has no owner (or is loading here) for `polls` looks."""

    node_id = 0

    def __init__(self, groups_shards: list, polls: int, owner: int | None, loading_here: bool) -> None:
        self.shards = groups_shards
        self.polls = polls
        self.owner = owner
        self.loading_here = loading_here
        self.looks = 0

    def _settled(self) -> bool:
        self.looks += 1
        if self.looks <= self.polls:
            return False
        if self.loading_here:
            self.shards[0] = LoadedShard()
        return True

    def loading(self, slot: int) -> bool:
        return self.loading_here and not self._settled()

    def leader(self, slot: int) -> int | None:
        if self.loading_here:
            return self.node_id
        return self.owner if self._settled() else None


@dataclasses.dataclass(frozen=True)
class Resource:
    resource_name: str = "g"


@dataclasses.dataclass(frozen=True)
class Request:
    resources: tuple = ()


@dataclasses.dataclass(frozen=True)
class Result:
    error_code: int


@dataclasses.dataclass(frozen=True)
class Answer:
    responses: tuple


class Peer:
    """The coordinator's answers, one per ask, the last repeated (None: not reachable)."""

    def __init__(self, *answers: int | None) -> None:
        self.answers = list(answers)
        self.asked: list[int] = []

    async def __call__(self, node: int, api_key: int, request: Request) -> Answer | None:
        assert request.resources == (Resource(),)
        self.asked.append(node)
        code = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        return None if code is None else Answer((Result(code),))


def _forwarding(polls: int, owner: int | None = 2, loading_here: bool = False, wait_s: float = 5.0,
                peer: Peer | None = None) -> tuple[GroupForwarding, MovingCluster, Peer]:
    shards: list = [None]
    cluster = MovingCluster(shards, polls, owner, loading_here)
    groups = GroupApi(shards, lambda group_id: 0, cluster)
    peer = peer or Peer(ErrorCode.NONE)
    return GroupForwarding(groups, peer, Refused, load_wait_s=wait_s, peer_load_wait_s=wait_s), cluster, peer


def _forwarded(forwarding: GroupForwarding, client_id: str = "kafka-configs") -> Result | None:
    header = RequestHeader(api_key=44, api_version=1, correlation_id=1, client_id=client_id, flexible=True)
    return asyncio.run(forwarding.forwarded(header, Request(), Resource(), "responses"))


def test_a_request_for_a_group_whose_partition_has_no_owner_waits_for_the_new_owner():
    forwarding, cluster, peer = _forwarding(polls=3, owner=2)
    assert _forwarded(forwarding) == Result(ErrorCode.NONE)
    assert cluster.looks > 3 and peer.asked == [2]


def test_a_request_for_a_group_loading_here_waits_for_the_load_and_is_answered_here():
    forwarding, _, peer = _forwarding(polls=3, loading_here=True)
    assert _forwarded(forwarding) is None
    assert forwarding.groups.shards[0].loaded and peer.asked == []


def test_a_coordinator_that_cannot_be_reached_or_lost_the_group_is_asked_again():
    forwarding, _, peer = _forwarding(polls=0, peer=Peer(None, None, ErrorCode.NOT_COORDINATOR,
                                                         ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NONE))
    assert _forwarded(forwarding) == Result(ErrorCode.NONE)
    assert peer.asked == [2] * 5


def test_the_coordinators_own_refusal_is_passed_on_at_once():
    forwarding, _, peer = _forwarding(polls=0, peer=Peer(ErrorCode.INVALID_CONFIG))
    assert _forwarded(forwarding) == Result(ErrorCode.INVALID_CONFIG)
    assert peer.asked == [2]


def test_a_group_still_without_an_owner_after_the_wait_is_coordinator_load_in_progress():
    forwarding, _, _ = _forwarding(polls=10**9, owner=2, wait_s=0.2)
    with pytest.raises(Refused) as refused:
        _forwarded(forwarding)
    assert refused.value.code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS


def test_a_coordinator_still_unreachable_after_the_wait_is_coordinator_not_available():
    forwarding, _, peer = _forwarding(polls=0, wait_s=0.2, peer=Peer(None))
    with pytest.raises(Refused) as refused:
        _forwarded(forwarding)
    assert refused.value.code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert len(peer.asked) >= 1


def test_a_coordinator_still_moving_after_the_wait_gives_its_own_last_answer():
    forwarding, _, _ = _forwarding(polls=0, wait_s=0.2, peer=Peer(ErrorCode.NOT_COORDINATOR))
    assert _forwarded(forwarding) == Result(ErrorCode.NOT_COORDINATOR)


def test_a_request_a_peer_forwarded_waits_for_the_load_here_but_is_never_forwarded_again():
    forwarding, _, _ = _forwarding(polls=3, loading_here=True)
    assert _forwarded(forwarding, f"{PEER_CLIENT_PREFIX}1") is None
    assert forwarding.groups.shards[0].loaded
    # Not coordinated here, owner moving: a peer's request is answered here (NOT_COORDINATOR
    # from the shard stand-in), without waiting for a new owner it would not forward to.
    forwarding, cluster, peer = _forwarding(polls=10**9, owner=2)
    assert _forwarded(forwarding, f"{PEER_CLIENT_PREFIX}1") is None
    assert cluster.looks == 0 and peer.asked == []


def test_the_waits_end_before_the_askers_give_up():
    # A peer's forwarded request is answered before the node-to-node client times out, and a
    # client's before the Admin client's default request.timeout.ms (30 s).
    assert PEER_LOAD_WAIT_S < PEER_TIMEOUT_S
    assert LOAD_WAIT_S < 30
