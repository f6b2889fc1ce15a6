"""Operator arguments as Kafka's tools spell them, parsed into plain values.

Pure functions over strings (the clock is passed in): `topic_spec` (``T`` or ``T:0,1``),
`parse_datetime` (Kafka's ``--to-datetime``: ISO-8601, local time unless a zone is given),
`parse_duration` (Java's ``Duration`` text, ``PnDTnHnMn.nS``), `offset_spec` (consume's
``--offset``), `header_pair` (``k=v``), `read_reset_plan` (the CSV ``--export`` writes).
Each raises ValueError with a message that says what is wrong; the parser turns it into
one line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

_DURATION = re.compile(
    r"^([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+(?:[.,]\d{0,9})?)S)?)?$",
    re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class TopicSpec:
    topic: str
    partitions: tuple[int, ...] | None = None     # None: every partition


def topic_spec(text: str) -> TopicSpec:
    """``orders`` or ``orders:0,2`` (Kafka's --topic for reset-offsets and delete-offsets)."""
    topic, sep, parts = text.partition(":")
    if not topic:
        raise ValueError(f"invalid topic {text!r} (use TOPIC or TOPIC:PARTITION,...)")
    if not sep:
        return TopicSpec(topic)
    try:
        partitions = tuple(sorted({int(p) for p in parts.split(",")}))
    except ValueError:
        raise ValueError(f"invalid partitions in {text!r} (use TOPIC:0,1,2)") from None
    if not partitions or partitions[0] < 0:
        raise ValueError(f"invalid partitions in {text!r} (use TOPIC:0,1,2)")
    return TopicSpec(topic, partitions)


def parse_datetime(text: str) -> int:
    """Milliseconds since the epoch for ``YYYY-MM-DDTHH:mm:SS[.sss][zone]``; local time when
    no zone is given, as Kafka's tool reads it. A whole number is already milliseconds since
    the epoch (as rpk's ``--to`` and Kafka's record timestamps count)."""
    if text.strip().isdigit():
        return int(text.strip())
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"invalid date-time {text!r} (use ISO-8601, e.g. 2024-05-01T09:30:00 "
                         "or 2024-05-01T09:30:00.000+02:00, or milliseconds since the epoch)") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()            # local time, as Kafka's tool assumes
    return int(moment.timestamp() * 1000)


def parse_duration(text: str) -> int:
    """Milliseconds of a Java/ISO-8601 duration such as ``PT30M``, ``P1DT2H`` or ``PT0.5S``."""
    m = _DURATION.match(text.strip())
    if not m or not any(m.group(i) for i in (2, 3, 4, 5)) or text.strip().upper().endswith("T"):
        raise ValueError(f"invalid duration {text!r} (use PnDTnHnMn.nS, e.g. PT30M, P1DT2H, PT10S)")
    sign, days, hours, minutes, seconds = m.groups()
    ms = ((int(days or 0) * 24 + int(hours or 0)) * 60 + int(minutes or 0)) * 60_000
    ms += int(Decimal((seconds or "0").replace(",", ".")) * 1000)
    return -ms if sign == "-" else ms


@dataclass(frozen=True, slots=True)
class OffsetSpec:
    """Where consume starts: an offset, ``earliest``, ``latest``, or the first record at a time."""

    kind: str                 # "offset" | "earliest" | "latest" | "timestamp"
    value: int = 0


def offset_spec(text: str) -> OffsetSpec:
    """``N``, ``earliest``, ``latest`` or ``@TIMESTAMP_MS``."""
    text = text.strip()
    if text in ("earliest", "beginning"):
        return OffsetSpec("earliest")
    if text in ("latest", "end"):
        return OffsetSpec("latest")
    try:
        if text.startswith("@"):
            return OffsetSpec("timestamp", int(text[1:]))
        value = int(text)
    except ValueError:
        raise ValueError(f"invalid offset {text!r} (use N, earliest, latest or @TIMESTAMP_MS)") from None
    if value < 0:
        raise ValueError(f"invalid offset {text!r}: offsets start at 0 (or use earliest)")
    return OffsetSpec("offset", value)


def header_pair(text: str) -> tuple[str, bytes]:
    """``key=value`` -> (key, value bytes)."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise ValueError(f"invalid header {text!r} (use KEY=VALUE)")
    return key, value.encode()


def read_reset_plan(text: str, groups: list[str]) -> dict[str, dict[tuple[str, int], int]]:
    """The CSV of ``reset-offsets --export``: ``topic,partition,offset`` lines for one group,
    ``group,topic,partition,offset`` for several. Returns group -> (topic, partition) -> offset."""
    plan: dict[str, dict[tuple[str, int], int]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        try:
            if len(cells) == 3:
                if len(groups) != 1:
                    raise ValueError("a line without a group needs exactly one --group")
                group, (topic, partition, offset) = groups[0], cells
            elif len(cells) == 4:
                group, topic, partition, offset = cells
            else:
                raise ValueError("expected topic,partition,offset or group,topic,partition,offset")
            key, value = (topic, int(partition)), int(offset)
        except ValueError as exc:
            raise ValueError(f"reset plan line {number}: {exc}" if "line" not in str(exc)
                             else str(exc)) from None
        if not topic or key[1] < 0 or value < 0:
            raise ValueError(f"reset plan line {number}: invalid {line.strip()!r}")
        plan.setdefault(group, {})[key] = value
    if not plan:
        raise ValueError("the reset plan file has no lines")
    return plan


def read_partition_list(text: str) -> dict[str, list[int]]:
    """``offset-delete --from-file`` as rpk reads it: one ``topic partition`` (or
    ``topic,partition``) a line. Returns topic -> sorted partitions."""
    partitions: dict[str, set[int]] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        cells = line.replace(",", " ").split()
        if len(cells) != 2 or not cells[1].isdigit():
            raise ValueError(f"line {number}: expected 'topic partition', got {line.strip()!r}")
        partitions.setdefault(cells[0], set()).add(int(cells[1]))
    if not partitions:
        raise ValueError("the file names no partitions")
    return {t: sorted(ps) for t, ps in partitions.items()}
