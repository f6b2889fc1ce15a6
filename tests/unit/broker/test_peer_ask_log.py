"""A peer that stays unreachable is logged once at INFO, not on every attempt.

A group config request waiting for a dead coordinator (admin/group_forwarding.py) asks it
again every quarter second for up to 20 s; each failed ask used to log a line at INFO,
about 80 lines for one wait. Now the loss and the return are logged once each, and the
attempts between at DEBUG.
"""

import asyncio
import logging

from kgroup.broker.cluster.peers import PeerUnavailable, Peers


class _Flaky(Peers):
    """Peers whose `request` fails while `down` holds, without any socket."""

    def __init__(self) -> None:
        super().__init__(1, {2: ("127.0.0.1", 1), 3: ("127.0.0.1", 1)})
        self.down: set[int] = set()

    async def request(self, node, api_key, body):
        if node in self.down:
            raise PeerUnavailable(f"node {node}: connection refused")
        return "answer"


def _ask_log(caplog, steps):
    """Run (node, down-or-not) asks; the answers and the INFO lines logged."""
    peers = _Flaky()

    async def scenario():
        answers = []
        for node, down in steps:
            (peers.down.add if down else peers.down.discard)(node)
            answers.append(await peers.ask(node, 0, None))
        return answers

    with caplog.at_level(logging.DEBUG, logger="kgroup.broker.peers"):
        answers = asyncio.run(scenario())
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    debugs = [r for r in caplog.records if r.levelno == logging.DEBUG]
    return answers, infos, len(debugs)


def test_a_peer_down_for_many_asks_is_logged_once_and_its_return_once(caplog):
    answers, infos, debugs = _ask_log(caplog, [(2, True)] * 80 + [(2, False), (2, False)])
    assert answers == [None] * 80 + ["answer", "answer"]
    assert infos == ["node 1: node 2: connection refused", "node 1: node 2 answers again"]
    assert debugs == 79


def test_each_peer_and_each_new_loss_is_logged(caplog):
    steps = [(2, True), (3, True), (2, True), (2, False), (2, True)]
    _, infos, _ = _ask_log(caplog, steps)
    assert infos == ["node 1: node 2: connection refused", "node 1: node 3: connection refused",
                     "node 1: node 2 answers again", "node 1: node 2: connection refused"]


def test_a_peer_that_always_answered_logs_nothing(caplog):
    _, infos, debugs = _ask_log(caplog, [(2, False)] * 5)
    assert (infos, debugs) == ([], 0)
