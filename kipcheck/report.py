"""Reports in Markdown and HTML with plots, for ``kipcheck check`` and campaigns.

A ``Report`` is a list of blocks (headings, paragraphs, tables, figures).  ``write(dir)``
writes ``report.md``, ``report.html`` and one SVG file per figure under ``plots/``; both
documents reference the same SVG files, so the report reads the same on a code host (Markdown)
and in a browser (HTML).  Plots are drawn here as plain SVG: no plotting library to install,
and the output is byte-for-byte a function of the data (reports of the same campaign diff
cleanly).
"""
from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path

PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf")


# ---- plots ------------------------------------------------------------------------------------

def _nice_ticks(lo: float, hi: float, n: int = 5) -> list:
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.floor(lo / step) * step
    ticks = [round(start, 10)]
    while ticks[-1] < hi - step * 1e-9:          # the last tick covers the largest value
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def _fmt_tick(v: float) -> str:
    if abs(v) >= 1e6:
        return f"{v / 1e6:g}M"
    if abs(v) >= 1e3:
        return f"{v / 1e3:g}k"
    return f"{v:g}"


@dataclass
class Figure:
    """A plot: ``kind`` "line" (``series``: name -> [(x, y)]) or "bar" (``bars``:
    [(label, value)])."""
    name: str                   # file stem: plots/<name>.svg
    title: str
    kind: str
    xlabel: str = ""
    ylabel: str = ""
    series: dict = field(default_factory=dict)
    bars: list = field(default_factory=list)
    caption: str = ""

    def svg(self, width: int = 640, height: int = 320) -> str:
        if self.kind == "line":
            return _line_svg(self, width, height)
        if self.kind == "bar":
            return _bar_svg(self, width, height)
        raise ValueError(f"unknown figure kind {self.kind!r}")


_M = (56, 16, 34, 48)           # margins: left, right, top, bottom


def _frame(fig: Figure, width: int, height: int, xt, yt, sx, sy) -> list:
    left, right, top, bottom = _M
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{width / 2}" y="18" text-anchor="middle" font-size="13">'
           f'{html.escape(fig.title)}</text>']
    x0, x1, y0, y1 = left, width - right, height - bottom, top
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="black"/>')
    out.append(f'<line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="black"/>')
    for t in yt:
        y = sy(t)
        out.append(f'<line x1="{x0}" y1="{y:.1f}" x2="{x1}" y2="{y:.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{x0 - 4}" y="{y + 4:.1f}" text-anchor="end">{_fmt_tick(t)}</text>')
    for t in xt or ():
        x = sx(t)
        out.append(f'<text x="{x:.1f}" y="{y0 + 14}" text-anchor="middle">{_fmt_tick(t)}</text>')
    if fig.xlabel:
        out.append(f'<text x="{(x0 + x1) / 2}" y="{height - 8}" text-anchor="middle">'
                   f'{html.escape(fig.xlabel)}</text>')
    if fig.ylabel:
        out.append(f'<text x="12" y="{(y0 + y1) / 2}" text-anchor="middle" '
                   f'transform="rotate(-90 12 {(y0 + y1) / 2})">{html.escape(fig.ylabel)}</text>')
    return out


def _line_svg(fig: Figure, width: int, height: int) -> str:
    pts = [p for s in fig.series.values() for p in s]
    xs = [p[0] for p in pts] or [0, 1]
    ys = [p[1] for p in pts] or [0, 1]
    xt = _nice_ticks(min(0, min(xs)), max(xs))
    yt = _nice_ticks(min(0, min(ys)), max(ys))
    left, right, top, bottom = _M

    def sx(v):
        return left + (v - xt[0]) / ((xt[-1] - xt[0]) or 1) * (width - left - right)

    def sy(v):
        return height - bottom - (v - yt[0]) / ((yt[-1] - yt[0]) or 1) * (height - top - bottom)

    out = _frame(fig, width, height, xt, yt, sx, sy)
    for i, (name, s) in enumerate(fig.series.items()):
        color = PALETTE[i % len(PALETTE)]
        if s:
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s)
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="1.8" '
                       f'points="{path}"/>')
            if len(s) <= 60:                      # markers, so a lone point shows too
                out += [f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="2.5" fill="{color}"/>'
                        for x, y in s]
        ly = top + 6 + 14 * i
        out.append(f'<rect x="{left + 8}" y="{ly}" width="10" height="3" fill="{color}"/>')
        out.append(f'<text x="{left + 22}" y="{ly + 5}">{html.escape(str(name))}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _bar_svg(fig: Figure, width: int, height: int) -> str:
    vals = [v for _, v in fig.bars] or [0]
    yt = _nice_ticks(0, max(max(vals), 1))
    left, right, top, bottom = _M

    def sy(v):
        return height - bottom - v / (yt[-1] or 1) * (height - top - bottom)

    out = _frame(fig, width, height, None, yt, None, sy)
    n = max(1, len(fig.bars))
    slot = (width - left - right) / n
    for i, (label, v) in enumerate(fig.bars):
        x = left + i * slot + slot * 0.15
        y = sy(v)
        out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}" '
                   f'height="{height - bottom - y:.1f}" fill="{PALETTE[i % len(PALETTE)]}"/>')
        out.append(f'<text x="{x + slot * 0.35:.1f}" y="{y - 3:.1f}" text-anchor="middle">'
                   f'{_fmt_tick(v)}</text>')
        out.append(f'<text x="{x + slot * 0.35:.1f}" y="{height - bottom + 14}" '
                   f'text-anchor="middle">{html.escape(str(label))[:24]}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# ---- documents --------------------------------------------------------------------------------

@dataclass
class Report:
    title: str
    blocks: list = field(default_factory=list)

    def heading(self, text: str, level: int = 2) -> None:
        self.blocks.append(("h", level, text))

    def para(self, text: str) -> None:
        self.blocks.append(("p", text))

    def table(self, header: list, rows: list) -> None:
        self.blocks.append(("t", [str(h) for h in header], [[str(c) for c in r] for r in rows]))

    def figure(self, fig: Figure) -> None:
        self.blocks.append(("f", fig))

    def code(self, text: str) -> None:
        self.blocks.append(("c", text))

    # -- output --
    def markdown(self) -> str:
        out = [f"# {self.title}", ""]
        for b in self.blocks:
            if b[0] == "h":
                out += ["#" * b[1] + " " + b[2], ""]
            elif b[0] == "p":
                out += [b[1], ""]
            elif b[0] == "c":
                out += ["```", b[1].rstrip("\n"), "```", ""]
            elif b[0] == "t":
                header, rows = b[1], b[2]
                out.append("| " + " | ".join(_md_cell(h) for h in header) + " |")
                out.append("|" + "---|" * len(header))
                out += ["| " + " | ".join(_md_cell(c) for c in r) + " |" for r in rows]
                out.append("")
            elif b[0] == "f":
                fig = b[1]
                out += [f"![{fig.title}](plots/{fig.name}.svg)", ""]
                if fig.caption:
                    out += [f"*{fig.caption}*", ""]
        return "\n".join(out).rstrip("\n") + "\n"

    def html(self) -> str:
        out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
               f"<title>{html.escape(self.title)}</title>",
               "<style>body{font-family:sans-serif;max-width:72em;margin:2em auto;padding:0 1em}"
               "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;"
               "padding:2px 8px;text-align:right}th{background:#eee}td:first-child,"
               "th:first-child{text-align:left}pre{background:#f6f6f6;padding:8px;"
               "overflow-x:auto}figure{margin:1em 0}</style></head><body>",
               f"<h1>{html.escape(self.title)}</h1>"]
        for b in self.blocks:
            if b[0] == "h":
                out.append(f"<h{b[1]}>{html.escape(b[2])}</h{b[1]}>")
            elif b[0] == "p":
                out.append(f"<p>{html.escape(b[1])}</p>")
            elif b[0] == "c":
                out.append(f"<pre>{html.escape(b[1])}</pre>")
            elif b[0] == "t":
                out.append("<table><tr>" + "".join(f"<th>{html.escape(h)}</th>" for h in b[1])
                           + "</tr>")
                for r in b[2]:
                    out.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r)
                               + "</tr>")
                out.append("</table>")
            elif b[0] == "f":
                fig = b[1]
                out.append(f'<figure><img src="plots/{fig.name}.svg" '
                           f'alt="{html.escape(fig.title)}">')
                if fig.caption:
                    out.append(f"<figcaption>{html.escape(fig.caption)}</figcaption>")
                out.append("</figure>")
        out.append("</body></html>")
        return "\n".join(out) + "\n"

    def write(self, directory) -> dict:
        """Write report.md, report.html and plots/*.svg; returns their paths."""
        d = Path(directory)
        (d / "plots").mkdir(parents=True, exist_ok=True)
        paths = {"markdown": d / "report.md", "html": d / "report.html", "plots": []}
        for b in self.blocks:
            if b[0] == "f":
                p = d / "plots" / f"{b[1].name}.svg"
                _atomic_write(p, b[1].svg())
                paths["plots"].append(p)
        _atomic_write(paths["markdown"], self.markdown())
        _atomic_write(paths["html"], self.html())
        return paths


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)
