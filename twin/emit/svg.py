"""Hand-written SVG for the report's pictures: a small canvas and the chart shapes the report uses.

Written by hand, not with matplotlib, so the bytes depend only on the design: every number goes
through :func:`num` (one decimal, no exponent), no ids, dates or font metrics are embedded, and
elements come out in the order they were drawn. A picture is a standalone SVG file (``report/*.svg``,
embedded by report.md) and the same text is inlined in report.html.

>>> c = Canvas(100, 40, "demo")
>>> c.rect(0, 0, 50.04, 10, "#4e79a7", tip="rack <1>")
>>> c.svg().decode().splitlines()[3]
'<rect x="0" y="0" width="50" height="10" fill="#4e79a7"><title>rack &lt;1&gt;</title></rect>'
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7", "#9c755f",
           "#af7aa1", "#86bcb6", "#e15759", "#bab0ac"]
OK, WARN, OVER = "#59a14f", "#edc948", "#e15759"  # utilisation below 80%, 80-100%, above the limit
INK, GRID, MUTED = "#222222", "#dddddd", "#777777"


def num(x: float) -> str:
    """A coordinate or length as SVG text: one decimal, trailing ``.0`` dropped, never ``-0``.

    >>> num(3.0), num(2.46), num(-0.01), num(1e6)
    ('3', '2.5', '0', '1000000')
    """
    s = f"{x:.1f}"
    if s.endswith(".0"):
        s = s[:-2]
    return "0" if s == "-0" else s


def attr(s: str) -> str:
    return escape(str(s), {'"': "&quot;"})


def status_colour(u: float) -> str:
    """Green below 80% of a limit, amber up to 100%, red above."""
    return OK if u < 0.8 else (WARN if u <= 1.0 + 1e-9 else OVER)


class Canvas:
    """An SVG drawing in user units (1 unit = 1 px at 100% zoom)."""

    def __init__(self, width: float, height: float, title: str, font_size: int = 11):
        self.width, self.height, self.title = width, height, title
        self.font_size = font_size
        self.items: list[str] = []

    def rect(self, x: float, y: float, w: float, h: float, fill: str, stroke: str | None = None, tip: str | None = None,
             dash: bool = False, opacity: float | None = None) -> None:
        a = f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(0.0, w))}" height="{num(max(0.0, h))}" fill="{fill}"'
        if stroke:
            a += f' stroke="{stroke}"'
        if dash:
            a += ' stroke-dasharray="3 2"'
        if opacity is not None:
            a += f' fill-opacity="{opacity:g}"'
        self.items.append(a + (f"><title>{escape(tip)}</title></rect>" if tip else "/>"))

    def line(self, x1: float, y1: float, x2: float, y2: float, stroke: str = INK, width: float = 1.0, dash: str | None = None,
             tip: str | None = None) -> None:
        a = f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" stroke="{stroke}"'
        if width != 1.0:
            a += f' stroke-width="{num(width)}"'
        if dash:
            a += f' stroke-dasharray="{dash}"'
        self.items.append(a + (f"><title>{escape(tip)}</title></line>" if tip else "/>"))

    def text(self, x: float, y: float, s: str, anchor: str = "start", size: float | None = None, bold: bool = False,
             fill: str | None = None, rotate: bool = False, cls: str | None = None) -> None:
        a = f'<text x="{num(x)}" y="{num(y)}"'
        if cls:
            a += f' class="{attr(cls)}"'
        if anchor != "start":
            a += f' text-anchor="{anchor}"'
        if size:
            a += f' font-size="{num(size)}"'
        if bold:
            a += ' font-weight="bold"'
        if fill:
            a += f' fill="{fill}"'
        if rotate:
            a += f' transform="rotate(-90 {num(x)} {num(y)})"'
        self.items.append(f"{a}>{escape(str(s))}</text>")

    def polyline(self, pts: list[tuple[float, float]], stroke: str, width: float = 1.5, dash: str | None = None,
                 tip: str | None = None) -> None:
        p = " ".join(f"{num(x)},{num(y)}" for x, y in pts)
        a = f'<polyline points="{p}" fill="none" stroke="{stroke}" stroke-width="{num(width)}"'
        if dash:
            a += f' stroke-dasharray="{dash}"'
        self.items.append(a + (f"><title>{escape(tip)}</title></polyline>" if tip else "/>"))

    def circle(self, x: float, y: float, r: float, fill: str, tip: str | None = None) -> None:
        a = f'<circle cx="{num(x)}" cy="{num(y)}" r="{num(r)}" fill="{fill}"'
        self.items.append(a + (f"><title>{escape(tip)}</title></circle>" if tip else "/>"))

    def group(self, cls: str, **data: str) -> None:
        """Open a ``<g>`` (class and ``data-*`` attributes) that the items drawn until :meth:`end` belong to."""
        extra = "".join(f' data-{k.replace("_", "-")}="{attr(v)}"' for k, v in data.items())
        self.items.append(f'<g class="{attr(cls)}"{extra}>')

    def end(self) -> None:
        self.items.append("</g>")

    def legend(self, x: float, y: float, entries: list[tuple[str, str]], step: float = 0.0) -> float:
        """Colour swatches with labels in one line from (x, y); returns the x after the last label."""
        for colour, label in entries:
            self.rect(x, y - 9, 10, 10, colour, stroke=MUTED if colour in ("#ffffff", "#f4f4f4") else None)
            self.text(x + 14, y, label)
            x += 14 + step + 6.2 * len(label) + 14
        return x

    def svg(self) -> bytes:
        w, h = num(self.width), num(self.height)
        head = (f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
                f'aria-label="{attr(self.title)}" font-family="sans-serif" font-size="{self.font_size}">')
        body = [head, f"<title>{escape(self.title)}</title>", f'<rect width="{w}" height="{h}" fill="#ffffff"/>', *self.items, "</svg>"]
        return ("\n".join(body) + "\n").encode("utf-8")


def nice_ticks(top: float, n: int = 4) -> list[float]:
    """Round tick values from 0 to at least ``top``.

    >>> nice_ticks(87), nice_ticks(0.3)
    ([0, 25, 50, 75, 100], [0.0, 0.1, 0.2, 0.3])
    """
    if top <= 0:
        return [0, 1]
    raw = top / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw - 1e-12)
    k = math.ceil(top / step - 1e-9)
    return [round(i * step, 10) if step < 1 else int(round(i * step)) for i in range(k + 1)]


def stacked_histogram(title: str, x_label: str, edges: list[float], series: list[tuple[str, str, list[int]]],
                      width: float = 560, height: float = 240) -> bytes:
    """Counts per bin (``edges`` has one more entry than each count list), series stacked bottom-up."""
    L, R, T, B = 56, 16, 30, 58
    c = Canvas(width, height, title)
    c.text(L, 18, title, bold=True)
    n = len(edges) - 1
    totals = [sum(s[2][i] for s in series) for i in range(n)]
    ticks = nice_ticks(max(totals) if totals else 1)
    top = ticks[-1] or 1
    pw, ph = width - L - R, height - T - B
    for t in ticks:
        y = T + ph - t / top * ph
        c.line(L, y, L + pw, y, GRID)
        c.text(L - 4, y + 4, f"{t:,}", anchor="end", size=9)
    bw = pw / max(1, n)
    for i in range(n):
        y = T + ph
        for name, colour, counts in series:
            if counts[i]:
                h = counts[i] / top * ph
                c.rect(L + i * bw + 1, y - h, bw - 2, h, colour, tip=f"{name}: {counts[i]:,} cables, {edges[i]:g}-{edges[i + 1]:g} m")
                y -= h
    every = max(1, math.ceil(n / 12))
    for i in range(0, n + 1, every):
        c.text(L + i * bw, T + ph + 13, f"{edges[i]:g}", anchor="middle", size=9)
    c.line(L, T + ph, L + pw, T + ph)
    c.text(L + pw / 2, T + ph + 28, x_label, anchor="middle")
    c.legend(L, height - 8, [(col, name) for name, col, _ in series])
    return c.svg()


def line_chart(title: str, x_label: str, y_label: str, series: list[tuple[str, str, list[tuple[float, float]]]],
               x_ticks: list[tuple[float, str]], log_x: bool = False, width: float = 560, height: float = 280) -> bytes:
    """Lines of (x, y) points on linear y from 0, linear or log2 x; ``x_ticks`` are (value, label)."""
    L, R, T, B = 60, 16, 30, 62
    c = Canvas(width, height, title)
    c.text(L, 18, title, bold=True)
    xs = [x for _, _, pts in series for x, _ in pts] + [v for v, _ in x_ticks]
    ys = [y for _, _, pts in series for _, y in pts]
    fx = (lambda v: math.log2(v)) if log_x else (lambda v: v)
    x0, x1 = min(fx(x) for x in xs), max(fx(x) for x in xs)
    x1 = x1 if x1 > x0 else x0 + 1
    ticks = nice_ticks(max(ys) if ys else 1)
    top = ticks[-1] or 1
    pw, ph = width - L - R, height - T - B

    def px(v):
        return L + (fx(v) - x0) / (x1 - x0) * pw

    def py(v):
        return T + ph - v / top * ph

    for t in ticks:
        c.line(L, py(t), L + pw, py(t), GRID)
        c.text(L - 4, py(t) + 4, f"{t:,}", anchor="end", size=9)
    for v, lab in x_ticks:
        c.line(px(v), T + ph, px(v), T + ph + 4)
        c.text(px(v), T + ph + 14, lab, anchor="middle", size=9)
    c.line(L, T + ph, L + pw, T + ph)
    c.line(L, T, L, T + ph)
    c.text(L + pw / 2, T + ph + 30, x_label, anchor="middle")
    c.text(14, T + ph / 2, y_label, anchor="middle", rotate=True)
    labels = []
    for k, (name, colour, pts) in enumerate(series):
        same = same_as(series[:k], pts)  # a line under another is drawn dashed over it and named so
        c.polyline([(px(x), py(y)) for x, y in pts], colour, 2, dash="6 4" if same else None, tip=name)
        for x, y in pts:
            c.circle(px(x), py(y), 2.5, colour, tip=f"{name}: {y:,.1f} at {x:g}")
        labels.append((colour, f"{name} (= {same})" if same else name))
    c.legend(L, height - 8, labels)
    return c.svg()


def same_as(earlier: list[tuple[str, str, list[tuple[float, float]]]], pts: list[tuple[float, float]], tol: float = 0.005) -> str | None:
    """The name of the first earlier series with the same points as ``pts`` (within ``tol``, relative), if any.

    >>> same_as([("a", "#000", [(1, 10.0), (2, 20.0)])], [(1, 10.02), (2, 20.0)]), same_as([("a", "#000", [(1, 10.0)])], [(1, 11.0)])
    ('a', None)
    """
    for name, _c, other in earlier:
        if len(other) == len(pts) and all(x1 == x2 and abs(y1 - y2) <= tol * max(abs(y1), abs(y2), 1e-12)
                                          for (x1, y1), (x2, y2) in zip(other, pts)):
            return name
    return None
