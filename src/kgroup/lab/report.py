"""The lab's HTML report: one self-contained file with tables and SVG plots.

``comparison`` aggregates per-group summary rows by variant (the sweep's Spark job computes
the same columns with Spark SQL from ``AGGREGATES``); ``render`` draws:
- the ownership timeline of one example group per variant through its first disruption,
- the downtime distribution per variant (stop-the-world seconds per member, and unowned
  partition-seconds per group, as box plots),
- partitions moved against the theoretical minimum per variant,
and tables of the comparison and of the invariant checks. A small script marks each plot
once the browser has laid it out (``data-rendered``), so a headless browser can confirm the
report really renders.
"""

from __future__ import annotations

import statistics
from typing import Any

from kgroup.lab.results import GroupResult
from kgroup.lab.svg import box_plot, esc, grouped_bars, holding_nothing, quantiles, timeline

# (output column, aggregate, input column): the comparison table, here and in Spark.
AGGREGATES: tuple[tuple[str, str, str], ...] = (
    ("groups", "count", "group"),
    ("rebalances_mean", "mean", "rebalances"),
    ("moved_mean", "mean", "moved"),
    ("min_moved_mean", "mean", "min_moved"),
    ("state_bytes_moved_mean", "mean", "state_bytes_moved"),
    ("unowned_partition_s_mean", "mean", "unowned_partition_s"),
    ("unowned_partition_s_max", "max", "unowned_partition_s"),
    ("stop_s_total_mean", "mean", "stop_s_total"),
    ("stop_s_max", "max", "stop_s_max"),
    ("converge_s_median", "median", "converge_s_median"),
    ("converge_s_max", "max", "converge_s_max"),
    ("duplicates_mean", "mean", "duplicates"),
    ("unconverged_events", "sum", "unconverged_events"),
    ("double_ownership", "sum", "double_ownership"),
    ("offset_regressions", "sum", "offset_regressions"),
    ("fatal_errors", "sum", "fatal_errors"),
    # A Kafka Streams app's scenarios (lab/restore.py); empty for consumers.
    ("tasks_moved_mean", "mean", "tasks_moved"),
    ("restore_s_mean", "mean", "restore_s"),
    ("restore_s_per_move_mean", "mean", "restore_s_per_move"),
    ("standby_promotions_mean", "mean", "standby_promotions"),
    ("standby_with_active", "sum", "standby_with_active"),
)
# Shown only when some variant has them (a streams app's sweep).
STREAMS_COLUMNS = ("tasks_moved_mean", "restore_s_mean", "restore_s_per_move_mean", "standby_promotions_mean",
                   "standby_with_active")
INVARIANTS = ("double_ownership", "offset_regressions")

# Column headings a reader understands at a glance (they wrap inside the cell).
LABELS = {
    "variant": "variant", "groups": "groups", "rebalances_mean": "rebalances (mean)",
    "moved_mean": "partitions moved (mean)", "min_moved_mean": "minimum to move (mean)",
    "state_bytes_moved_mean": "state moved (mean)", "unowned_partition_s_mean": "unowned partition-s (mean)",
    "unowned_partition_s_max": "unowned partition-s (max)", "stop_s_total_mean": "stop-the-world s, all members (mean)",
    "stop_s_max": "longest stop s", "converge_s_median": "converge s (median)", "converge_s_max": "converge s (max)",
    "duplicates_mean": "records read twice (mean)", "unconverged_events": "unconverged events",
    "double_ownership": "double ownership", "offset_regressions": "offsets going back", "fatal_errors": "fatal errors",
    "tasks_moved_mean": "active tasks moved (mean)", "restore_s_mean": "restore s (mean)",
    "restore_s_per_move_mean": "restore s per moved task (mean)",
    "standby_promotions_mean": "moves restoring nothing (mean)", "standby_with_active": "standby with its active",
}
# Columns that count things (no decimals) and that hold bytes (with units).
COUNTS = frozenset({"groups", "rebalances_mean", "moved_mean", "min_moved_mean", "duplicates_mean",
                    "unconverged_events", "double_ownership", "offset_regressions", "fatal_errors", "member",
                    "moved", "min_moved", "rebalances", "members", "generation", "partitions",
                    "tasks_moved_mean", "standby_promotions_mean", "standby_with_active"})
BYTES = frozenset({"state_bytes_moved_mean", "state_bytes_moved"})


def label(column: str) -> str:
    """A column's heading: the table above, else its name with spaces."""
    return LABELS.get(column, column.replace("_", " "))


def fmt_count(v: float) -> str:
    """1,048 (a mean of whole counts keeps one decimal only when it has one)."""
    return f"{v:,.0f}" if abs(v - round(v)) < 0.05 else f"{v:,.1f}"


def fmt_bytes(v: float) -> str:
    """104.8 GB, 12 MB, 512 B."""
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(v) >= size:
            return f"{v / size:,.1f} {unit}"
    return f"{v:,.0f} B"


def fmt_value(column: str, v: Any) -> str:
    """A table cell for column's value."""
    if v is None:
        return "–"
    if isinstance(v, bool) or isinstance(v, str):
        return str(v)
    if column in BYTES:
        return fmt_bytes(v)
    if column in COUNTS or isinstance(v, int):
        return fmt_count(v)
    if isinstance(v, float):
        return f"{v:,.2f}" if abs(v) < 100 else f"{v:,.1f}"
    return str(v)


def shown_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The comparison's columns, the streams ones only where some row has them."""
    return [a[0] for a in AGGREGATES
            if a[0] not in STREAMS_COLUMNS or any(r.get(a[0]) is not None for r in rows)]


def comparison(summaries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per variant (in first-seen order) with the ``AGGREGATES`` columns."""
    by_variant: dict[str, list[dict[str, Any]]] = {}
    for row in summaries:
        by_variant.setdefault(row["variant"], []).append(row)
    out = []
    for variant, rows in by_variant.items():
        agg: dict[str, Any] = {"variant": variant}
        for name, how, column in AGGREGATES:
            values = [r[column] for r in rows if r.get(column) is not None]
            if how == "count":
                agg[name] = len(rows)
            elif not values:
                agg[name] = None
            elif how == "mean":
                agg[name] = sum(values) / len(values)
            elif how == "max":
                agg[name] = max(values)
            elif how == "sum":
                agg[name] = sum(values)
            elif how == "median":
                agg[name] = statistics.median(values)
        out.append(agg)
    return out


def stop_quantiles(results: list[GroupResult]) -> tuple[float, ...] | None:
    values = [v for r in results for v in r.stop_s.values()]
    return quantiles(values) if values else None


def _segments(result: GroupResult) -> tuple[list[tuple[str, list[tuple[float, float, int]]]], float]:
    """Per member, (from s, to s, partitions held) segments from the ownership intervals."""
    changes: dict[str, list[tuple[int, int]]] = {}
    for name, _topic, _p, start, end in result.timeline or ():
        changes.setdefault(name, []).extend(((start, 1), (end, -1)))
    rows = []
    last = 0
    for name in sorted(changes):
        points = sorted(changes[name])
        segs = []
        held = 0
        prev = points[0][0]
        for t, delta in points:
            if t != prev and held:
                segs.append((prev / 1000, t / 1000, held))
            held += delta
            prev = t
            last = max(last, t)
        rows.append((name, segs))
    return rows, last / 1000


def _example_plot(variant: str, result: GroupResult) -> str:
    rows, end = _segments(result)
    first = next((w for w in result.windows), None)
    if first is not None:
        # Close in on the first disruption, so a rebalance's gap is wide enough to see.
        start = max(0.0, first["start_s"] - 3)
        stop = first["start_s"] + (first["converge_s"] or 30) + 5
    else:
        start, stop = 0.0, end or 1.0
    marks = [(w["start_s"], f"{w['kind']} m{w['member']:03d}" if w["member"] >= 0 else w["kind"])
             for w in result.windows]
    stopped = sum(1 for name, segs in rows if holding_nothing(segs, start, min(stop, result.gone.get(name, stop))))
    plot = timeline(f"Ownership through a rebalance: {variant}", rows, start, stop, marks, result.gone)
    return (plot + f'<p class="note">{esc(variant)}: {stopped} of {len(rows)} members held nothing at some '
            f"point in this window.</p>")


def _n(count: int, noun: str) -> str:
    return f"{count:,} {noun}" + ("" if count == 1 else "s")


def takeaway(rows: list[dict[str, Any]]) -> str:
    """What the comparison says, in a sentence or three."""
    if not rows:
        return ""

    def seconds(v: float) -> str:
        return f"{v:,.1f}"

    if len(rows) == 1:
        r = rows[0]
        parts = [f"{r['variant']}: {fmt_count(r.get('rebalances_mean') or 0)} rebalances",
                 f"{fmt_count(r.get('moved_mean') or 0)} partitions moved (the minimum: "
                 f"{fmt_count(r.get('min_moved_mean') or 0)})",
                 f"members stopped for {seconds(r.get('stop_s_total_mean') or 0)} s in all"]
        return ", ".join(parts) + "."
    sentences = []
    for column, fmt, better, worse, same in (
            ("moved_mean", fmt_count, "{v} moved {x} partitions", "where {v} moved {x}", "moved {x} partitions"),
            ("stop_s_total_mean", seconds, "{v} stopped its members for {x} s in all",
             "where {v} stopped them for {x} s", "stopped its members for {x} s in all"),
            ("rebalances_mean", fmt_count, "{v} had {x} rebalances", "where {v} had {x}", "had {x} rebalances")):
        values = [(r[column], r["variant"]) for r in rows if r.get(column) is not None]
        if not values:
            continue
        (lo, best), (hi, worst) = min(values), max(values)
        if fmt(lo) == fmt(hi):
            sentences.append("every variant " + same.format(x=fmt(lo)))
        else:
            sentences.append(better.format(v=best, x=fmt(lo)) + " " + worse.format(v=worst, x=fmt(hi)))
    return "Per group: " + "; ".join(sentences) + "."


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    head = "".join(f'<th title="{esc(c)}">{esc(label(c))}</th>' for c in columns)
    body = []
    for r in rows:
        cells = []
        for c in columns:
            v = fmt_value(c, r.get(c))
            cls = ' class="bad"' if c in INVARIANTS and v not in ("0", "–") else ""
            cells.append(f"<td{cls}>{esc(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table class="fit"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody>'
            f'</table></div>')


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 22px; } h2 { font-size: 17px; margin-top: 28px; }
table { border-collapse: collapse; font-size: 12px; margin: 8px 0; }
/* The page's width, however many columns: fixed layout shares it out and long headings and
   values wrap inside their cells (a 1280 px window shows every column, nothing to scroll). */
table.fit { width: 100%; table-layout: fixed; }
div.scroll { overflow-x: auto; max-width: 100%; }
th { white-space: normal; overflow-wrap: anywhere; vertical-align: bottom; font-weight: 600; }
td { overflow-wrap: anywhere; }
th, td { border: 1px solid #ccc; padding: 3px 4px; text-align: right; }
th:first-child, td:first-child { text-align: left; }
td.bad { background: #f6d5d5; font-weight: bold; }
.ok { color: #2d7a46; font-weight: bold; } .fail { color: #b84a4a; font-weight: bold; }
.note { color: #555; font-size: 13px; max-width: 760px; }
p.takeaway { font-size: 15px; max-width: 760px; background: #eef4fb; border-left: 4px solid #3b6fb6;
             padding: 8px 12px; }
svg.plot { display: block; margin: 10px 0 18px; }
"""

_CHECK = """
window.addEventListener('load', function () {
  var plots = document.querySelectorAll('svg.plot'), ok = 0;
  plots.forEach(function (svg) {
    var box = svg.getBBox(), marks = svg.querySelectorAll('.mark').length;
    var good = box.width > 0 && box.height > 0 && marks > 0;
    svg.setAttribute('data-rendered', good ? 'yes' : 'no');
    svg.setAttribute('data-marks', String(marks));
    if (good) ok++;
  });
  document.body.setAttribute('data-plots', String(plots.length));
  document.body.setAttribute('data-plots-rendered', String(ok));
  // Table headings must fit their cells and not run into their neighbours.
  var overlaps = 0;
  document.querySelectorAll('thead tr').forEach(function (row) {
    var cells = row.querySelectorAll('th');
    cells.forEach(function (th, i) {
      if (th.scrollWidth > th.clientWidth + 1 || th.scrollHeight > th.clientHeight + 1) overlaps++;
      if (i > 0 && cells[i - 1].getBoundingClientRect().right > th.getBoundingClientRect().left + 0.5) overlaps++;
    });
  });
  document.body.setAttribute('data-header-cells', String(document.querySelectorAll('th').length));
  document.body.setAttribute('data-header-overlaps', String(overlaps));
  // Tables within the page (nothing to scroll sideways), and every bar tall enough to see.
  var wide = 0;
  document.querySelectorAll('div.scroll').forEach(function (box) {
    if (box.scrollWidth > box.clientWidth + 1) wide++;
  });
  if (document.documentElement.scrollWidth > document.documentElement.clientWidth + 1) wide++;
  document.body.setAttribute('data-wide-tables', String(wide));
  var bars = [].map.call(document.querySelectorAll('rect.bar'), function (r) { return r.getBBox().height; });
  document.body.setAttribute('data-bars', String(bars.length));
  document.body.setAttribute('data-min-bar-height', String(bars.length ? Math.min.apply(null, bars) : 0));
});
"""


def render(title: str, summaries: list[dict[str, Any]], windows: list[dict[str, Any]],
           examples: dict[str, GroupResult], stops: dict[str, tuple[float, ...] | None],
           comparison_rows: list[dict[str, Any]] | None = None, note: str = "") -> str:
    """The whole report as one HTML string."""
    rows = comparison_rows if comparison_rows is not None else comparison(summaries)
    variants = [r["variant"] for r in rows]
    violations = sum((r.get("double_ownership") or 0) + (r.get("offset_regressions") or 0) for r in rows)
    verdict = (f'<span class="ok">0 invariant violations</span> across {_n(len(summaries), "group")}'
               if violations == 0 else f'<span class="fail">{violations} invariant violations</span>')
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
             f"<style>{_STYLE}</style></head><body>",
             f"<h1>{esc(title)}</h1>",
             f"<p>{_n(len(summaries), 'simulated group')}, {_n(len(variants), 'variant')}. {verdict} "
             f"(double ownership, committed offsets going backwards).</p>"]
    said = takeaway(rows)
    if said:
        parts.append(f'<p class="takeaway"><b>Takeaway.</b> {esc(said)}</p>')
    if note:
        parts.append(f'<p class="note">{esc(note)}</p>')
    parts.append("<h2>Comparison</h2>")
    parts.append(_table(rows, ["variant"] + shown_columns(rows)))
    parts.append("<h2>Ownership timeline</h2><p class='note'>One group per variant, each member a row; "
                 "shaded while it holds partitions (darker: more), blank while it holds none. Dashed "
                 "lines mark disruptions.</p>")
    for variant in variants:
        if variant in examples:
            parts.append(_example_plot(variant, examples[variant]))
    parts.append("<h2>Downtime</h2><p class='note'>Stop-the-world: time a running member spent "
                 "in a rebalance holding nothing to consume. Unowned: partitions nobody held (a "
                 "restarting or dead member's included), summed over time.</p>")
    parts.append(_stop_plot(variants, stops))
    unowned = [(v, [s["unowned_partition_s"] for s in summaries if s["variant"] == v]) for v in variants]
    parts.append(_values_plot("Unowned partition-seconds per group", unowned, "partition-seconds"))
    parts.append("<h2>Partitions moved</h2><p class='note'>Mean per group. The minimum is what a "
                 "balanced assignment over the members present after each disruption must move "
                 "(a member that comes back under its own name keeps its local state).</p>")
    by = {r["variant"]: r for r in rows}
    parts.append(grouped_bars("Partitions moved against the theoretical minimum", variants,
                              [("moved", [by[v]["moved_mean"] or 0.0 for v in variants]),
                               ("minimum", [by[v]["min_moved_mean"] or 0.0 for v in variants])],
                              "partitions per group"))
    if windows:
        parts.append("<h2>Events</h2>")
        shown = windows[:200]
        parts.append(_table(shown, list(shown[0].keys())))
        if len(windows) > len(shown):
            parts.append(f"<p class='note'>First {len(shown)} of {len(windows)} event windows; all are "
                         f"in windows.parquet.</p>")
    parts.append(f"<script>{_CHECK}</script></body></html>")
    return "\n".join(parts)


def _stop_plot(variants: list[str], stops: dict[str, tuple[float, ...] | None]) -> str:
    groups = [(v, stops.get(v)) for v in variants]
    return box_plot("Stop-the-world seconds per member", groups, "seconds")


def _values_plot(title: str, groups: list[tuple[str, list[float]]], unit: str) -> str:
    return box_plot(title, [(label, quantiles(vs) if vs else None) for label, vs in groups], unit)
