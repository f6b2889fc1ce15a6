"""The driver side of a streaming read (``kgroup.spark.stream``): offsets, AvailableNow,
commits to ``group.id`` and group membership, for one query.

Its own module so that a task's Python worker, which unpickles the stream reader only to
call ``read``, never imports the admin client and the group member this needs; the stream
reader makes a ``StreamPlanner`` on first use on the driver (``DriverSide``). How planning
and committing work: ``kgroup.spark.stream``'s module comment.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

from pyspark.sql.streaming.datasource import ReadLimit, ReadMaxRows

from kgroup.client.admin import EARLIEST, LATEST
from kgroup.client.blocking import BlockingAdmin, LoopThread
from kgroup.client.errors import GroupNotEmpty, KafkaClientError

from .offsets import TP, DataLossError, admit, positions_of, stream_offset
from .options import SourceOptions
from .topics import log_offsets, partitions, resolve

if TYPE_CHECKING:
    from .membership import QueryMember

# How long latestOffset waits for the member: to join at first, later for a rebalance.
_JOIN_WAIT_S = 60.0
_REBALANCE_WAIT_S = 30.0


class StreamPlanner:
    """The driver side of one streaming query: offsets, AvailableNow, commits, membership."""

    def __init__(self, opts: SourceOptions) -> None:
        self.opts = opts
        self.loop = LoopThread("kgroup-spark-stream")
        self.admin = BlockingAdmin(opts.bootstrap, client_id="kgroup-spark-stream",
                                   loop=self.loop, config=opts.consumer)
        self.target: dict[TP, int] | None = None
        self.committed: dict[TP, int] = {}
        self.member: QueryMember | None = None
        self._views = 0
        if opts.group_member:
            # Only here: group membership's modules are most of what this module would
            # load, on the critical path of every query's start.
            from .membership import QueryMember

            self.member = QueryMember(opts, self.loop, str(opts.starting or "latest"))
            self.member.start()
            _leave_on_sigterm()

    def close(self) -> None:
        try:
            if self.member is not None:
                self.member.close()
            self.admin.close()
        finally:
            self.loop.close()

    # -- Spark's calls -----------------------------------------------------------------------

    def initial(self) -> dict:
        """Where a new query starts: startingOffsets (default latest); in group mode
        nothing yet — each partition resumes from the group's offset when assigned."""
        if self.member is not None:
            return stream_offset({})
        tps = partitions(self.admin, self.opts, must_exist=False)
        earliest = log_offsets(self.admin, tps, EARLIEST)
        latest = log_offsets(self.admin, tps, LATEST)
        return stream_offset(resolve(self.opts.starting, "latest", EARLIEST, tps, earliest,
                                     latest))

    def prepare_available_now(self) -> None:
        """Trigger.AvailableNow: read up to the latest offsets of now, no further."""
        tps = partitions(self.admin, self.opts, must_exist=False)
        self.target = log_offsets(self.admin, tps, LATEST)

    def latest(self, start: Mapping, limit: ReadLimit) -> dict:
        """Commit ``start`` (a finished micro-batch), then plan the next micro-batch."""
        self.completed(start)
        before = positions_of(start)
        if self.member is not None:
            continuing, new = self.member.view(_JOIN_WAIT_S if not self._views
                                               else _REBALANCE_WAIT_S)
            self._views += 1
            new |= continuing - before.keys()
            tps = sorted(continuing | new)
            fresh = self._group_positions(new)
        else:
            tps = partitions(self.admin, self.opts, must_exist=False)
            fresh = {tp: EARLIEST for tp in tps if tp not in before}  # a new partition
        if not tps:
            return dict(start)
        earliest = log_offsets(self.admin, tps, EARLIEST)
        latest = log_offsets(self.admin, tps, LATEST)
        lows: dict[TP, int] = {}
        resumed: dict[TP, int] = {}
        for tp in tps:
            lo = before[tp] if tp not in fresh else (
                earliest[tp] if fresh[tp] == EARLIEST else
                latest[tp] if fresh[tp] == LATEST else fresh[tp])
            if not earliest[tp] <= lo <= latest[tp]:
                if self.opts.fail_on_data_loss:
                    raise DataLossError(
                        f"{tp[0]}-{tp[1]}: the query is at offset {lo} but the log holds "
                        f"{earliest[tp]} to {latest[tp]}; records were deleted or the topic "
                        "was recreated")
                lo = earliest[tp]
            if tp in fresh or lo != before.get(tp):
                resumed[tp] = lo
            lows[tp] = lo
        highs = {tp: latest[tp] if self.target is None else
                 max(lows[tp], min(latest[tp], self.target.get(tp, lows[tp]))) for tp in tps}
        rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        ends = admit({tp: (lows[tp], highs[tp]) for tp in tps}, rows)
        if all(ends[tp] == lows[tp] for tp in tps):
            return dict(start)  # nothing new: no micro-batch
        if self.member is not None:
            self.member.planned(ends)
        return stream_offset(ends, resumed)

    def completed(self, offset: Mapping) -> None:
        """Every micro-batch up to ``offset`` is done: commit it to the group, if any."""
        positions = positions_of(offset)
        if self.member is not None:
            self.member.completed(positions)
            return
        group = self.opts.group_id
        changed = {tp: off for tp, off in positions.items() if self.committed.get(tp) != off}
        if group is None or not changed:
            return
        try:
            self.admin.commit_group_offsets(group, changed)
        except GroupNotEmpty:
            raise KafkaClientError(
                f"cannot commit the query's offsets to group {group!r}: the group has active "
                "members", "give the query a group.id of its own, or join the group with "
                "group.mode=member") from None
        self.committed.update(changed)

    # -- pieces ------------------------------------------------------------------------------

    def _group_positions(self, tps: set[TP]) -> dict[TP, int]:
        """The group's committed offsets of ``tps``; EARLIEST / LATEST (startingOffsets)
        where it has none."""
        if not tps:
            return {}
        wanted: dict[str, list[int]] = {}
        for t, p in sorted(tps):
            wanted.setdefault(t, []).append(p)
        assert self.opts.group_id is not None
        committed = self.admin.group_offsets(self.opts.group_id, wanted)
        default = LATEST if (self.opts.starting or "latest") == "latest" else EARLIEST
        return {tp: committed.get(tp, default) for tp in tps}


def _leave_on_sigterm() -> None:
    """Spark ends a query's reader process with SIGTERM, which skips the reader's stop().
    Turned into SystemExit, it unwinds through Spark's ``finally: reader.stop()``, so the
    member commits and leaves the group instead of waiting out its session."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
