"""``groups describe --members --verbose --telemetry HOST:PORT``: each member's own metrics.

Clients that push metrics (KIP-714; Java clients with ``enable.metrics.push``, on by
default, once a client-metrics subscription selects them) are shown by the broker's HTTP
listener (``kgroup serve --http-listen``) at ``/api/telemetry``, each tied to the group member
whose client id and host are its own. Kafka's protocol has no request that reads them, so
this asks that listener; the columns are kgroup's own, after Kafka's.
"""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from typing import Any

from .errors import CliError

# Column -> the key metric's name in /api/telemetry (broker/observe/client_telemetry.py).
COLUMNS = (("POLL-IDLE-RATIO", "poll-idle-ratio-avg"), ("COMMIT-LATENCY-AVG", "commit-latency-avg"),
           ("REBALANCES", "rebalance-total"))


def _fetch(address: str, timeout: float) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"http://{address}/api/telemetry", timeout=timeout) as answer:
            return json.load(answer)
    except (OSError, ValueError, urllib.error.URLError) as exc:
        raise CliError(f"cannot read client telemetry from http://{address}/api/telemetry: {exc}",
                       "give --telemetry the broker's --http-listen address") from None


async def by_member(address: str, group: str, timeout: float = 10.0) -> dict[str, dict[str, float]]:
    """member id -> its client's key metrics, for the members of `group` whose client pushes."""
    listing = await asyncio.to_thread(_fetch, address, timeout)
    return {c["member_id"]: c.get("key_metrics", {}) for c in listing.get("clients", ())
            if c.get("group") == group and c.get("member_id")}


def cells(metrics: dict[str, float] | None) -> list[str]:
    def fmt(value: float | None) -> str:
        if value is None:
            return "-"
        return str(int(value)) if float(value).is_integer() else f"{value:.3f}"
    return [fmt((metrics or {}).get(key)) for _, key in COLUMNS]
