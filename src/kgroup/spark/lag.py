"""Lag for Spark jobs: commit any streaming Kafka query's progress to a named consumer group.

Spark's own Kafka source (format("kafka")) never commits offsets to Kafka, so lag tools see
nothing of a Spark job. ``GroupCommitListener`` is a ``StreamingQueryListener``: after each
micro-batch Spark reports the batch's progress, whose sources carry their end offsets, and
the listener commits those offsets to ``group_id`` as a "simple" group commit (OffsetCommit
without membership, as `kafka-consumer-groups --reset-offsets` does). Then `kgroup groups
describe`, Kafka's `kafka-consumer-groups --describe` and the kgroup console show the job's
committed offsets and lag, on kgroup and on any Kafka::

    from kgroup.spark.lag import GroupCommitListener

    spark.streams.addListener(GroupCommitListener("127.0.0.1:9092", "orders-job"))

How this works: Spark posts a query's progress event once the micro-batch is done — its sink
has committed and its commit log entry is written — so the group never runs ahead of what the
job has processed. Both offset formats are read: Spark's Kafka source's
``{"topic": {"0": 42}}`` and format("kgroup")'s ``{"offsets": {"topic": {"0": 42}}}``.
Only offsets that differ from the group's are committed: the listener reads the group's
offsets the first time it commits, so a query restarted from its checkpoint commits nothing
until it gets further than before, and a progress event Spark repeats (an idle trigger, a
batch re-run after a restart) commits nothing again. The committed offset of a partition is
the next offset the job will read, as a Kafka consumer commits.

Delivery of the commits: Spark calls listeners on its listener bus, asynchronously; a commit
that fails (the broker is away, the group has active members) is logged and retried with the
next progress event, and never fails the query. The group must have no active members: a
query's group is the job's own.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from pyspark.sql.streaming import StreamingQueryListener

from kgroup.client.errors import GroupNotEmpty, KafkaClientError

from .offsets import TP, flat

log = logging.getLogger(__name__)


def end_offsets(source_offsets: Iterable[Any]) -> dict[TP, int]:
    """The (topic, partition) -> next offset of a progress event's sources' end offsets
    (JSON text or already-parsed dicts), in either connector's format; other sources (files,
    rate, ...) contribute nothing."""
    out: dict[TP, int] = {}
    for raw in source_offsets:
        data = raw
        if isinstance(raw, str):
            try:
                data = json.loads(raw)
            except json.JSONDecodeError:
                continue
        if not isinstance(data, dict):
            continue
        if isinstance(data.get("offsets"), dict):    # format("kgroup")
            data = data["offsets"]
        try:
            offsets = flat(data)
        except (AttributeError, TypeError, ValueError):
            continue                                  # not a Kafka source's offsets
        out.update({tp: off for tp, off in offsets.items() if off >= 0})
    return out


class GroupCommitListener(StreamingQueryListener):
    """Commits each micro-batch's end offsets to ``group_id``; see the module comment.

    ``query_name``: only the query of that name (``writeStream.queryName``), else every
    query of the session. ``config``: client settings (security, ...) by Kafka's names.
    """

    def __init__(self, bootstrap: str, group_id: str, *, query_name: str | None = None,
                 config: Mapping[str, Any] | None = None) -> None:
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.query_name = query_name
        self.config = dict(config or {})
        self.commits = 0                              # OffsetCommit requests sent and accepted
        self.committed: dict[TP, int] | None = None   # the group's offsets, once read
        self._admin: Any = None
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._batches: dict[str, int] = {}            # query id -> last batch id seen

    # -- Spark's calls -------------------------------------------------------------------------

    def onQueryStarted(self, event: Any) -> None:
        pass

    def onQueryProgress(self, event: Any) -> None:
        progress = event.progress
        if self.query_name is not None and progress.name != self.query_name:
            return
        offsets = end_offsets(s.endOffset for s in progress.sources)
        try:
            self.commit(offsets)
        except Exception as exc:  # noqa: BLE001 - a listener never fails the query
            log.warning("kgroup lag listener: committing batch %s of query %s to group %r failed: "
                        "%s (retried with the next batch)", progress.batchId, progress.name or
                        progress.id, self.group_id, exc)
        with self._done:
            self._batches[str(progress.id)] = int(progress.batchId)
            self._done.notify_all()

    def onQueryIdle(self, event: Any) -> None:
        pass

    def onQueryTerminated(self, event: Any) -> None:
        pass

    # -- committing ----------------------------------------------------------------------------

    def commit(self, offsets: Mapping[TP, int]) -> dict[TP, int]:
        """Commit what differs from the group's offsets; returns what was committed."""
        with self._lock:
            admin = self._client()
            if self.committed is None:
                self.committed = dict(admin.group_offsets(self.group_id))
            changed = {tp: off for tp, off in offsets.items() if self.committed.get(tp) != off}
            if not changed:
                return {}
            try:
                admin.commit_group_offsets(self.group_id, changed)
            except GroupNotEmpty:
                raise KafkaClientError(
                    f"group {self.group_id!r} has active members, so a Spark job cannot commit to it",
                    "give the job a group of its own") from None
            self.committed.update(changed)
            self.commits += 1
            return changed

    def wait_for_batch(self, query_id: str, batch_id: int, timeout: float = 60.0) -> bool:
        """Wait until the progress of ``batch_id`` of the query has been handled (Spark calls
        listeners asynchronously); False on timeout."""
        with self._done:
            return self._done.wait_for(lambda: self._batches.get(str(query_id), -1) >= batch_id,
                                       timeout)

    def _client(self) -> Any:
        if self._admin is None:
            from kgroup.client.blocking import BlockingAdmin

            self._admin = BlockingAdmin(self.bootstrap, client_id="kgroup-spark-lag",
                                        config=self.config)
        return self._admin

    def close(self) -> None:
        """Close the listener's client (after ``spark.streams.removeListener``)."""
        with self._lock:
            if self._admin is not None:
                self._admin.close()
                self._admin = None
