"""StreamsGroupDescribe polled every 100 ms from a thread of its own: every answer kept (each
instance's active and standby tasks, the group and assignment epochs), and every moment a
task was active on two instances at once."""

from __future__ import annotations

import threading

from tests.integration.waits import pace
from tests.streams.wire import Wire, tasks_of


class Poller(threading.Thread):
    """Describes the group every 100 ms; keeps every answer and each overlap it saw."""

    def __init__(self, bootstrap: str, group: str) -> None:
        super().__init__(daemon=True)
        self.wire = Wire(bootstrap)
        self.group = group
        self.snapshots: list[dict[str, tuple[set, set]]] = []
        self.epochs: list[tuple[int, int]] = []          # (group epoch, assignment epoch) of each
        self.overlaps: list[str] = []
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.is_set():
            try:
                d = self.wire.describe_streams_group(self.group)
            except (OSError, RuntimeError, ConnectionError):
                self.wire.close()
                pace(0.1)
                continue
            if int(d.error_code) == 0:
                members = {m.client_id.split("-StreamThread")[0]: (tasks_of(m.assignment),
                                                                    tasks_of(m.assignment, "standby_tasks"))
                           for m in d.members}
                seen: dict[str, str] = {}
                for member, (active, _) in members.items():
                    for task in active:
                        if task in seen:
                            self.overlaps.append(f"{task} active on {seen[task]} and {member}")
                        seen[task] = member
                self.snapshots.append(members)
                self.epochs.append((d.group_epoch, d.assignment_epoch))
            pace(0.1)

    def latest(self) -> dict[str, tuple[set, set]]:
        return self.snapshots[-1] if self.snapshots else {}

    def stop(self) -> None:
        self._halt.set()
        self.join(timeout=10)
        self.wire.close()
