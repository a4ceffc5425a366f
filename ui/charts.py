"""Small inline SVG charts, generated here: no chart library, no CDN, nothing for the browser to fetch.

Colours and fonts come from classes styled in ``static/ui.css`` (the page's Content-Security-Policy
allows no inline styles). Values may be None (a gap in the line).
"""

from __future__ import annotations

import math
from html import escape

W, H = 520, 240
LEFT, RIGHT, TOP, BOTTOM = 56, 14, 46, 36


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        hi = lo + 1.0
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step) + 2) if first + i * step <= hi + 1e-12]


def _fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def line_chart(title: str, xs: list[int], series: list[tuple[str, list[float | None]]], y_label: str = "",
               bars: bool = False, y_zero: bool = False, within: tuple[float, float] | None = None) -> str:
    """A chart of one or more series over cycle numbers ``xs``; ``bars`` draws the first as bars.

    ``within``: the values' natural range (rewards: 0..1); when every value lies in it, the axis's
    padding and ticks stop at its ends (a reward axis never shows -0.6 or 1.5)."""
    values = [v for _, ys in series for v in ys if v is not None and not math.isnan(v)]
    if not xs or not values:
        return (f'<svg class="chart" role="img" aria-label="{escape(title)}: no data" viewBox="0 0 {W} 60">'
                f'<text class="chart-title" x="8" y="20">{escape(title)}</text>'
                f'<text class="chart-empty" x="8" y="44">no data yet</text></svg>')
    lo, hi = min(values), max(values)
    if y_zero or bars:
        lo = min(lo, 0.0)
    if hi == lo:  # a flat series: pad around it, but never below zero for data that is never negative
        lo, hi = (max(lo - 0.5, 0.0) if lo >= 0 else lo - 0.5), hi + 0.5
    inside = within is not None and within[0] <= min(values) and max(values) <= within[1]
    if inside:
        lo, hi = max(lo, within[0]), min(hi, within[1])
    ticks = _ticks(lo, hi)
    if inside:
        ticks = [t for t in ticks if within[0] <= t <= within[1]] or [lo, hi]
    lo, hi = min(lo, ticks[0]), max(hi, ticks[-1])
    x0, x1 = min(xs), max(xs)
    span = max(x1 - x0, 1)

    pad = (W - LEFT - RIGHT) / (2 * len(xs))  # half a slot each side: bars and end points stay inside

    def px(x: float) -> float:
        return LEFT + pad + (x - x0) / span * (W - LEFT - RIGHT - 2 * pad) if x1 > x0 else (LEFT + W - RIGHT) / 2

    def py(y: float) -> float:
        return TOP + (hi - y) / (hi - lo) * (H - TOP - BOTTOM)

    out = [f'<svg class="chart" role="img" aria-label="{escape(title)}" viewBox="0 0 {W} {H}">',
           f'<title>{escape(title)}</title><text class="chart-title" x="{LEFT}" y="18">{escape(title)}</text>']
    for t in ticks:
        out.append(f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{py(t):.1f}" y2="{py(t):.1f}"/>'
                   f'<text class="tick" x="{LEFT - 6}" y="{py(t) + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
    for x in xs:
        out.append(f'<text class="tick" x="{px(x):.1f}" y="{H - BOTTOM + 16}" text-anchor="middle">{x}</text>')
    out.append(f'<text class="axis-label" x="{(LEFT + W - RIGHT) / 2}" y="{H - 4}" text-anchor="middle">cycle</text>')
    if y_label:
        out.append(f'<text class="axis-label" x="12" y="{(TOP + H - BOTTOM) / 2}" text-anchor="middle" '
                   f'transform="rotate(-90 12 {(TOP + H - BOTTOM) / 2})">{escape(y_label)}</text>')
    bar_w = max(4.0, pad)
    for i, (label, ys) in enumerate(series):
        pts = [(px(x), py(y), x, y) for x, y in zip(xs, ys, strict=True) if y is not None and not math.isnan(y)]
        if bars and i == 0:
            for x, y, cx, cy in pts:
                top, base = min(y, py(0)), max(y, py(0))
                out.append(f'<rect class="bar s{i}" x="{x - bar_w / 2:.1f}" y="{top:.1f}" width="{bar_w:.1f}" '
                           f'height="{max(base - top, 1):.1f}"><title>{escape(label)} cycle {cx}: {_fmt(cy)}</title></rect>')
            continue
        path = " ".join(f"{'M' if j == 0 else 'L'}{x:.1f},{y:.1f}" for j, (x, y, _, _) in enumerate(pts))
        if path:
            out.append(f'<path class="line s{i}" d="{path}"/>')
        for x, y, cx, cy in pts:
            out.append(f'<circle class="dot s{i}" cx="{x:.1f}" cy="{y:.1f}" r="3.5">'
                       f'<title>{escape(label)} cycle {cx}: {_fmt(cy)}</title></circle>')
    lx = LEFT + 8
    for i, (label, _) in enumerate(series):
        out.append(f'<rect class="swatch s{i}" x="{lx}" y="{TOP - 20}" width="10" height="10"/>'
                   f'<text class="legend" x="{lx + 14}" y="{TOP - 11}">{escape(label)}</text>')
        lx += 22 + 7 * len(label)
    out.append("</svg>")
    return "".join(out)


def spread(lo: float | None, mean: float | None, hi: float | None, domain: tuple[float, float], width: int = 160) -> str:
    """A one-line reward spread: the min..max range with the mean marked, on a shared ``domain``."""
    if lo is None or hi is None or mean is None:
        return ""
    d0, d1 = domain
    scale = (width - 8) / (d1 - d0) if d1 > d0 else 0.0

    def px(v: float) -> float:
        return 4 + (v - d0) * scale

    return (f'<svg class="spread" role="img" aria-label="reward {lo:.3g} to {hi:.3g}, mean {mean:.3g}" '
            f'viewBox="0 0 {width} 14" width="{width}" height="14">'
            f'<line class="spread-axis" x1="4" x2="{width - 4}" y1="7" y2="7"/>'
            f'<rect class="spread-range" x="{px(lo):.1f}" y="3" width="{max(px(hi) - px(lo), 2):.1f}" height="8"/>'
            f'<line class="spread-mean" x1="{px(mean):.1f}" x2="{px(mean):.1f}" y1="1" y2="13"/></svg>')
