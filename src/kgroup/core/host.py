"""The broker's part around a coordinator shard, without I/O: append, replay, deliver.

How this works: a handler (or an expired timer) returns a `Result`. `apply` appends each of
its records to the log and replays it into the coordinator, record by record (replay is
the only thing that changes stored state, and the log holds everything stored state was
built from), and then hands the replies to `deliver`. Timers run one operation at a time,
each Result applied before the next operation runs, because the next one may read what
the last one stored (`run_due_timers`). A restart is a fresh coordinator that replays the
log (`reload`); a snapshot is the records that rebuild stored state from nothing
(`compact`). Nothing here reads a clock: callers pass `now_ms`.

Who hosts a shard this way: the lab (lab/coordinator.py) and the unit tests' group context
(a list as the log, replies delivered at once). The broker's shard (broker/groups/shard.py) keeps
its own `apply`, for concerns of its layer: it encodes each record into a durable log,
hands replies out only once that log is durable up to its end as of that moment (at once,
after a flush, or from a task awaiting fsync), counts records towards its next snapshot
and re-arms an asyncio timer; going through this class would put a call more on every
request for nothing it shares. Its timer loop is `run_due_timers`, bounded.
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Iterator

from kgroup.core import record_codec
from kgroup.core.coordinator import GroupCoordinatorShard
from kgroup.core.records import Record
from kgroup.core.result import ReplyTo, Result
from kgroup.core.timers import TimerOp


def run_due_timers(coordinator: GroupCoordinatorShard, now_ms: int, apply: Callable[[Result], Any],
                   limit: int | None = None) -> Iterator[tuple[TimerOp, Result]]:
    """Run the timer operations due at `now_ms`, earliest first, each Result handed to
    `apply` before the next operation runs; yield each (operation, Result) once applied.
    At most `limit` operations (None: every one due)."""
    expire_next = coordinator.expire_next
    ran = 0
    while limit is None or ran < limit:
        due = expire_next(now_ms)
        if due is None:
            return
        apply(due[1])
        ran += 1
        yield due


def replay_all(coordinator: GroupCoordinatorShard, records: Iterable[Record]) -> None:
    """Replay `records` in order into `coordinator` (a load, before `load_complete`)."""
    deque(map(coordinator.replay, records), 0)    # the loop in C: loads replay a lot


def replay_payloads(coordinator: GroupCoordinatorShard, payloads: Iterable[bytes]) -> None:
    """Decode and replay log payloads in order into `coordinator` (a load): the same as
    `replay_all(coordinator, map(decode, payloads))`, with plain offset commits stored
    from their bytes (record_codec.replay_payloads says which and why)."""
    stored = coordinator.shard.stored
    record_codec.replay_payloads(payloads, stored.offsets, stored.open_txn_groups, coordinator.replay)


class CoordinatorHost:
    """Runs a coordinator shard's handlers and timers over a log: `apply` every Result.

    `log` is a list the host appends to (and can `reload` from and `compact`), or give
    `append` instead, any callable that takes a record. Subclasses say what delivering a
    reply means (`deliver`) and may watch what was stored (`stored`).
    """

    def __init__(self, coordinator: GroupCoordinatorShard, log: list[Record] | None = None, *,
                 append: Callable[[Record], Any] | None = None) -> None:
        if (log is None) == (append is None):
            raise ValueError("give the host a log (a list) or an append callable, not both")
        self.coordinator = coordinator
        self.log = log
        self._append = log.append if log is not None else append

    # ---- what a subclass says -------------------------------------------------------------

    def deliver(self, replies: tuple[tuple[ReplyTo, Any], ...]) -> None:
        """Hand replies to the requests waiting for them (called once their records are stored)."""
        raise NotImplementedError

    def stored(self, records: tuple[Record, ...]) -> None:
        """`records` were appended and replayed (before their Result's replies are delivered)."""

    # ---- the path every Result takes ------------------------------------------------------

    def apply(self, result: Result) -> None:
        """Append and replay the Result's records, one by one, then deliver its replies."""
        records = result.records
        if records:
            append = self._append
            replay = self.coordinator.replay
            for record in records:
                append(record)
                replay(record)
            self.stored(records)
        if result.replies:
            self.deliver(result.replies)

    def handle(self, handler: Callable[..., Result], request: Any, reply: ReplyTo, now_ms: int,
               *args: Any) -> Result:
        """Run a handler of the coordinator and apply its Result. A handler that raises
        (a GroupError for the request) has changed nothing, and nothing is applied."""
        result = handler(request, reply, now_ms, *args)
        self.apply(result)
        return result

    def expire(self, now_ms: int) -> int:
        """Run every timer operation due at `now_ms` (see `run_due_timers`); how many ran."""
        ran = 0
        for _ in run_due_timers(self.coordinator, now_ms, self.apply):
            ran += 1
        return ran

    def next_deadline(self) -> int | None:
        """When `expire` next has work to do, or None."""
        return self.coordinator.next_deadline()

    # ---- restarts and snapshots (a list as the log) -------------------------------------

    def reload(self, coordinator: GroupCoordinatorShard) -> None:
        """A restart: `coordinator` (a fresh one) replays the log and takes over. The caller
        then applies `load_complete` (after any topic update the broker would give first)."""
        assert self.log is not None, "only a list as the log can be read back"
        replay_all(coordinator, self.log)
        self.coordinator = coordinator

    def compact(self) -> None:
        """Replace the log by the records that rebuild stored state from nothing (what the
        broker's snapshots do)."""
        assert self.log is not None, "only a list as the log can be compacted"
        self.log[:] = self.coordinator.snapshot_records()
