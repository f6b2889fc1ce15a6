"""Tiny SVG charts for the lab's report: a timeline (Gantt), box plots and grouped bars.

Pure string building, no dependencies, so the report is one self-contained HTML file that
any browser opens. Every drawn datum carries ``class="mark"``, which the report's render
check counts.
"""

from __future__ import annotations

import html
import math

PALETTE = ("#3b6fb6", "#d9822b", "#3a9a5b", "#b84a4a", "#7d5ba6", "#8c6d3f", "#c55a9d", "#5c7d8a")
W, H = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 70, 20, 30, 60
BAR_MIN = 3.0


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = min((m * mag for m in (1, 2, 5, 10) if m * mag >= raw), default=raw)
    start = math.ceil(lo / step) * step
    out = []
    v = start
    while v <= hi + 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def _fmt(v: float) -> str:
    if abs(v) >= 100 or v == int(v):
        return f"{v:.0f}"
    return f"{v:.2g}" if abs(v) < 1 else f"{v:.1f}"


def _frame(title: str, parts: list[str], height: int = H, legend: list[tuple[str, str]] | None = None) -> str:
    out = [f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" '
           f'viewBox="0 0 {W} {height}" role="img" aria-label="{esc(title)}">',
           f'<text x="{LEFT}" y="18" font-size="14" font-weight="bold">{esc(title)}</text>']
    out += parts
    if legend:
        x = W - RIGHT
        for i, (label, color) in enumerate(reversed(legend)):
            width = 18 + 7 * len(label)
            x -= width
            out.append(f'<rect x="{x}" y="8" width="10" height="10" fill="{color}"/>'
                       f'<text x="{x + 14}" y="17" font-size="11">{esc(label)}</text>')
    out.append("</svg>")
    return "\n".join(out)


def _y_axis(lo: float, hi: float, height: int, label: str) -> tuple[list[str], callable]:
    plot_h = height - TOP - BOTTOM

    def y(v: float) -> float:
        return TOP + plot_h - (v - lo) / (hi - lo or 1) * plot_h

    parts = [f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" stroke="#333"/>']
    for t in _ticks(lo, hi):
        parts.append(f'<line x1="{LEFT - 4}" y1="{y(t):.1f}" x2="{W - RIGHT}" y2="{y(t):.1f}" stroke="#ddd"/>'
                     f'<text x="{LEFT - 6}" y="{y(t) + 4:.1f}" font-size="11" text-anchor="end">{_fmt(t)}</text>')
    parts.append(f'<text x="14" y="{TOP + plot_h / 2:.0f}" font-size="11" text-anchor="middle" '
                 f'transform="rotate(-90 14 {TOP + plot_h / 2:.0f})">{esc(label)}</text>')
    return parts, y


def box_plot(title: str, groups: list[tuple[str, tuple[float, ...] | None]], unit: str) -> str:
    """One box per label from its (min, 25th, median, 75th, max); None draws nothing."""
    values = [q[4] for _, q in groups if q] or [0.0]
    lo, hi = 0.0, max(values) * 1.05 or 1.0
    parts, y = _y_axis(lo, hi, H, unit)
    n = max(1, len(groups))
    slot = (W - LEFT - RIGHT) / n
    for i, (label, q) in enumerate(groups):
        cx = LEFT + slot * (i + 0.5)
        color = PALETTE[i % len(PALETTE)]
        parts.append(f'<text x="{cx:.1f}" y="{H - BOTTOM + 16}" font-size="11" text-anchor="middle">'
                     f'{esc(label)}</text>')
        if not q:
            continue
        if q[4] - q[0] <= max(1e-9, abs(q[4]) * 1e-3):
            # No spread (one group, or all alike): the number says more than a flat line.
            parts.append(f'<g class="mark value"><title>{esc(label)}: {_fmt(q[2])} {esc(unit)}</title>'
                         f'<circle cx="{cx:.1f}" cy="{y(q[2]):.1f}" r="4" fill="{color}"/>'
                         f'<text x="{cx:.1f}" y="{y(q[2]) - 9:.1f}" font-size="13" font-weight="bold" '
                         f'text-anchor="middle" fill="{color}">{esc(_fmt(q[2]))}</text></g>')
            continue
        half = min(40.0, slot * 0.3)
        parts.append(
            f'<g class="mark"><title>{esc(label)}: min {q[0]:.2f}, median {q[2]:.2f}, max {q[4]:.2f} {esc(unit)}'
            f'</title>'
            f'<line x1="{cx:.1f}" y1="{y(q[0]):.1f}" x2="{cx:.1f}" y2="{y(q[4]):.1f}" stroke="{color}"/>'
            f'<rect x="{cx - half:.1f}" y="{y(q[3]):.1f}" width="{2 * half:.1f}" '
            f'height="{max(1.0, y(q[1]) - y(q[3])):.1f}" fill="{color}" fill-opacity="0.35" stroke="{color}"/>'
            f'<line x1="{cx - half:.1f}" y1="{y(q[2]):.1f}" x2="{cx + half:.1f}" y2="{y(q[2]):.1f}" '
            f'stroke="{color}" stroke-width="2"/>'
            # A box too thin to read gets its median written above it.
            + (f'<text x="{cx:.1f}" y="{y(q[3]) - 7:.1f}" font-size="12" text-anchor="middle" fill="{color}">'
               f'{esc(_fmt(q[2]))}</text>' if y(q[1]) - y(q[3]) < 4 else "")
            + '</g>')
    return _frame(title, parts)


def grouped_bars(title: str, labels: list[str], series: list[tuple[str, list[float]]], unit: str) -> str:
    """Bars per label, one per series (e.g. moved and the theoretical minimum)."""
    values = [v for _, vs in series for v in vs] or [0.0]
    hi = max(values) * 1.1 or 1.0
    parts, y = _y_axis(0.0, hi, H, unit)
    n = max(1, len(labels))
    slot = (W - LEFT - RIGHT) / n
    width = slot * 0.7 / max(1, len(series))
    for i, label in enumerate(labels):
        x0 = LEFT + slot * i + slot * 0.15
        parts.append(f'<text x="{LEFT + slot * (i + 0.5):.1f}" y="{H - BOTTOM + 16}" font-size="11" '
                     f'text-anchor="middle">{esc(label)}</text>')
        for j, (name, vs) in enumerate(series):
            v = vs[i]
            # At least BAR_MIN px tall and its value written above it: a zero (e.g. a minimum
            # of nothing to move) is a visible stub labelled 0, not a missing bar.
            height = max(BAR_MIN, y(0) - y(v))
            x = x0 + j * width
            parts.append(f'<rect class="mark bar" x="{x:.1f}" y="{y(0) - height:.1f}" width="{width - 2:.1f}" '
                         f'height="{height:.1f}" fill="{PALETTE[j % len(PALETTE)]}">'
                         f'<title>{esc(label)} {esc(name)}: {v:.2f}</title></rect>'
                         f'<text x="{x + (width - 2) / 2:.1f}" y="{y(0) - height - 4:.1f}" font-size="11" '
                         f'text-anchor="middle">{esc(_fmt(v))}</text>')
    legend = [(name, PALETTE[j % len(PALETTE)]) for j, (name, _) in enumerate(series)]
    return _frame(title, parts, legend=legend)


def holding_nothing(segs: list[tuple[float, float, int]], start: float, end: float) -> list[tuple[float, float]]:
    """The stretches of [start, end] in which a member held no partition."""
    gaps, at = [], start
    for a, b, n in sorted(segs):
        if n <= 0 or b <= start:
            continue
        if a > at:
            gaps.append((at, min(a, end)))
        at = max(at, b)
        if at >= end:
            break
    if at < end:
        gaps.append((at, end))
    return [(a, b) for a, b in gaps if b > a]


def timeline(title: str, rows: list[tuple[str, list[tuple[float, float, int]]]], start: float, end: float,
             marks: list[tuple[float, str]] = (), gone: dict[str, float] | None = None) -> str:
    """Per member, segments (from, to, partitions held); darker means more partitions, red
    means the member held nothing (at least 2 px wide, so a short stop still shows); grey,
    from ``gone[member]`` on, that it left the group for good (it holds nothing, and need not).

    ``marks`` are vertical lines (time, label), e.g. when a disruption began.
    """
    row_h = 14
    height = TOP + BOTTOM + row_h * max(1, len(rows))
    plot_w = W - LEFT - RIGHT
    span = (end - start) or 1.0

    def x(t: float) -> float:
        return LEFT + (min(max(t, start), end) - start) / span * plot_w

    # Shade by what is in view: a start-up moment elsewhere must not wash out this window.
    most = max((n for _, segs in rows for a, b, n in segs if b > start and a < end), default=1) or 1
    parts = []
    for i, (name, segs) in enumerate(rows):
        top = TOP + i * row_h
        parts.append(f'<text x="{LEFT - 6}" y="{top + row_h - 3}" font-size="10" text-anchor="end">{esc(name)}</text>'
                     f'<rect x="{LEFT}" y="{top + 1}" width="{plot_w}" height="{row_h - 2}" fill="#f3f3f3"/>')
        for a, b, n in segs:
            if b <= start or a >= end or n <= 0:
                continue
            parts.append(f'<rect class="mark" x="{x(a):.1f}" y="{top + 1}" width="{max(0.5, x(b) - x(a)):.1f}" '
                         f'height="{row_h - 2}" fill="{PALETTE[0]}" fill-opacity="{0.25 + 0.75 * n / most:.2f}">'
                         f'<title>{esc(name)}: {n} partitions, {a:.2f}-{b:.2f} s</title></rect>')
        left = (gone or {}).get(name)
        if left is not None and left < end:
            parts.append(f'<rect class="mark left" x="{x(left):.1f}" y="{top + 1}" '
                         f'width="{max(2.0, x(end) - x(left)):.1f}" height="{row_h - 2}" fill="#bbbbbb"><title>'
                         f'{esc(name)}: left the group for good at {left:.2f} s</title></rect>')
        for a, b in holding_nothing(segs, start, end if left is None else min(end, left)):
            parts.append(f'<rect class="mark gap" x="{x(a):.1f}" y="{top + 1}" width="{max(2.0, x(b) - x(a)):.1f}" '
                         f'height="{row_h - 2}" fill="#d64541"><title>{esc(name)}: holds nothing, '
                         f'{a:.2f}-{b:.2f} s</title></rect>')
    axis_y = TOP + row_h * max(1, len(rows))
    parts.append(f'<line x1="{LEFT}" y1="{axis_y}" x2="{W - RIGHT}" y2="{axis_y}" stroke="#333"/>')
    for t in _ticks(start, end, 8):
        parts.append(f'<text x="{x(t):.1f}" y="{axis_y + 14}" font-size="11" text-anchor="middle">{_fmt(t)}</text>')
    parts.append(f'<text x="{LEFT + plot_w / 2:.0f}" y="{axis_y + 30}" font-size="11" text-anchor="middle">'
                 f'time (s)</text>')
    for t, label in marks:
        if start <= t <= end:
            parts.append(f'<line x1="{x(t):.1f}" y1="{TOP}" x2="{x(t):.1f}" y2="{axis_y}" stroke="#b84a4a" '
                         f'stroke-dasharray="4 3"/><text x="{x(t) + 3:.1f}" y="{TOP - 4}" font-size="10" '
                         f'fill="#b84a4a">{esc(label)}</text>')
    legend = [("holds partitions", PALETTE[0]), ("holds nothing", "#d64541")]
    if any(t < end for t in (gone or {}).values()):
        legend.append(("left for good", "#bbbbbb"))
    return _frame(title, parts, height=height, legend=legend)


def quantiles(values: list[float]) -> tuple[float, float, float, float, float]:
    """(min, 25th, median, 75th, max) by linear interpolation."""
    vs = sorted(values)

    def q(f: float) -> float:
        pos = f * (len(vs) - 1)
        lo = math.floor(pos)
        hi = min(lo + 1, len(vs) - 1)
        return vs[lo] + (vs[hi] - vs[lo]) * (pos - lo)

    return vs[0], q(0.25), q(0.5), q(0.75), vs[-1]
