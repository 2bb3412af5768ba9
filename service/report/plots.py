"""Plots as inline SVG for the HTML reports: a heat map with its colour scale, and a histogram
of observed counts against expected ones. No scripts, no fonts, no links: the text takes the
page's font, every label goes through ``html.escape`` (``html_labels.e``) and each cell or bar
carries its exact figures as a ``<title>`` (a browser's tooltip; the printout has the axes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from math import floor, log10

from service.report.html_labels import e

BLUE = (33, 102, 172)
WHITE = (247, 247, 247)
RED = (178, 24, 43)
INK = "#1d2430"
MUTED = "#5d6675"
BAR = "#7f9cc0"
EXPECTED = "#c0392b"


def diverging(t: float) -> str:
    """The colour of ``t`` on a scale from -1 (blue) through 0 (near white) to 1 (red);
    beyond the ends, the end's colour.

    >>> diverging(-1), diverging(0), diverging(2)
    ('#2166ac', '#f7f7f7', '#b2182b')
    """
    t = max(-1.0, min(1.0, t))
    end = RED if t > 0 else BLUE
    r, g, b = (round(w + (c - w) * abs(t)) for w, c in zip(WHITE, end, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def nice_step(top: float, ticks: int = 4) -> float:
    """A step of 1, 2 or 5 times a power of ten giving about ``ticks`` steps up to ``top``.

    >>> nice_step(370), nice_step(7), nice_step(0.08)
    (100, 2, 0.02)
    """
    if top <= 0:
        return 1
    raw = top / ticks
    power = 10.0 ** floor(log10(raw))
    factor = next(f for f in (1, 2, 5, 10) if raw <= f * power * (1 + 1e-12))
    step = factor * power
    return int(step) if step >= 1 else round(step, 12)


def _svg(width: float, height: float, label: str, body: Sequence[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{e(label)}" '
        f'width="{width:.0f}" height="{height:.0f}" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'style="max-width:100%;height:auto" font-size="11" fill="{INK}">'
        f"<title>{e(label)}</title>{''.join(body)}</svg>"
    )


def _text(x: float, y: float, text: str, anchor: str = "middle", extra: str = "") -> str:
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>{e(text)}</text>'


@dataclass(frozen=True)
class Axis:
    """A heat map's axis: a title, tick labels at cell indexes (each with an optional colour)
    and groups of cells labelled together (first index, last index, label)."""

    title: str
    ticks: Sequence[tuple[int, str, str]]
    groups: Sequence[tuple[int, int, str]] = ()


def heat_map(
    values: Sequence[Sequence[float]],
    tips: Sequence[Sequence[str]],
    *,
    rows: Axis,
    columns: Axis,
    centre: float,
    spread: float,
    scale_title: str,
    label: str,
    cell: int = 12,
) -> str:
    """``values[row][column]`` as coloured cells: ``centre`` near white, ``centre ± spread``
    full blue or red; a colour bar with five ticks on the right."""
    left, top = 58, 36
    width_cells, height_cells = cell * len(values[0]), cell * len(values)
    bar_x = left + width_cells + 24
    width, height = bar_x + 96, top + height_cells + 44
    body = []
    for r, row in enumerate(values):
        for c, value in enumerate(row):
            body.append(
                f'<rect x="{left + c * cell}" y="{top + r * cell}" width="{cell}" '
                f'height="{cell}" fill="{diverging((value - centre) / spread)}">'
                f"<title>{e(tips[r][c])}</title></rect>"
            )
    body.append(
        f'<rect x="{left}" y="{top}" width="{width_cells}" height="{height_cells}" '
        f'fill="none" stroke="{MUTED}"/>'
    )
    for index, text, colour in rows.ticks:
        y = top + index * cell + cell * 0.8
        body.append(
            _text(left - 4, y, text, "end", f' font-size="{cell * 0.85:.1f}" fill="{colour}"')
        )
    for index, text, _ in columns.ticks:
        x = left + index * cell + cell / 2
        body.append(
            f'<line x1="{x}" y1="{top + height_cells}" x2="{x}" y2="{top + height_cells + 4}" '
            f'stroke="{MUTED}"/>'
        )
        body.append(_text(x, top + height_cells + 15, text))
    for first, last, text in columns.groups:
        x0, x1 = left + first * cell, left + (last + 1) * cell
        body.append(
            f'<line x1="{x0 + 1}" y1="{top - 6}" x2="{x1 - 1}" y2="{top - 6}" stroke="{MUTED}"/>'
        )
        body.append(_text((x0 + x1) / 2, top - 10, text))
    body.append(
        _text(left + width_cells / 2, height - 6, columns.title, extra=' font-weight="600"')
    )
    middle = top + height_cells / 2
    body.append(
        _text(
            12, middle, rows.title, extra=f' font-weight="600" transform="rotate(-90 12 {middle})"'
        )
    )
    body += _colour_bar(bar_x, top, height_cells, centre, spread, scale_title)
    return _svg(width, height, label, body)


def _colour_bar(
    x: float, top: float, height: float, centre: float, spread: float, title: str
) -> list[str]:
    """A vertical bar from ``centre + spread`` (top, red) to ``centre - spread``."""
    steps = 40
    body = []
    for k in range(steps):
        t = 1 - 2 * (k + 0.5) / steps
        body.append(
            f'<rect x="{x}" y="{top + k * height / steps:.2f}" width="14" '
            f'height="{height / steps + 0.3:.2f}" fill="{diverging(t)}"/>'
        )
    body.append(
        f'<rect x="{x}" y="{top}" width="14" height="{height}" fill="none" stroke="{MUTED}"/>'
    )
    for k in range(5):
        t = 1 - k / 2
        y = top + k * height / 4
        value = centre + t * spread
        body.append(f'<line x1="{x + 14}" y1="{y}" x2="{x + 18}" y2="{y}" stroke="{MUTED}"/>')
        mark = ("≥ " if k == 0 else "≤ " if k == 4 else "") + f"{value:.2f}"
        body.append(_text(x + 21, y + 4, mark, "start"))
    middle = top + height / 2
    body.append(
        _text(
            x + 80,
            middle,
            title,
            extra=f' font-weight="600" transform="rotate(-90 {x + 80} {middle})"',
        )
    )
    return body


@dataclass(frozen=True)
class _Plot:
    """A histogram's plot area, in pixels, and where a count falls in it."""

    left: int
    top: int
    width: int
    height: int
    y_top: float  # the count at the top of the y axis
    slot: float  # one bin's width

    def y(self, value: float) -> float:
        return self.top + self.height * (1 - value / self.y_top)


def histogram(
    labels: Sequence[str],
    observed: Sequence[float],
    expected: Sequence[float],
    *,
    x_title: str,
    y_title: str,
    observed_label: str,
    expected_label: str,
    label: str,
    at_edges: bool = False,
    mark: tuple[float, str] | None = None,
    width: int = 460,
    height: int = 230,
) -> str:
    """``observed`` as bars and ``expected`` as a line over them, bin by bin. ``labels`` name
    the bins, or with ``at_edges`` their edges (one more than the bins); ``mark`` draws a
    dashed vertical line at a position along the x axis in bins (e.g. 0.1 of the first)."""
    highest = max([*observed, *expected, 1]) * 1.05
    step = nice_step(highest)
    y_top = step * -(-highest // step)
    ticks = [k * step for k in range(round(y_top / step) + 1)]
    left = 30 + 7 * max(len(f"{tick:,g}") for tick in ticks)
    right, top, bottom = 12, 34, 44
    plot_w, plot_h = width - left - right, height - top - bottom
    plot = _Plot(left, top, plot_w, plot_h, y_top, plot_w / len(observed))
    body = _y_grid(plot, ticks)
    body += _bars(plot, labels, observed, expected, at_edges, (observed_label, expected_label))
    body.append(_expected_line(plot, expected))
    if mark is not None:
        x = left + mark[0] * plot.slot
        body.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_h}" stroke="{INK}" '
            'stroke-dasharray="3 3"/>'
        )
    body.append(
        f'<line x1="{left}" y1="{plot.y(0)}" x2="{left + plot_w}" y2="{plot.y(0)}" '
        f'stroke="{MUTED}"/>'
    )
    body += _x_labels(plot, labels, len(observed), at_edges)
    body.append(_text(left + plot_w / 2, height - 6, x_title))
    body.append(
        _text(
            12, top + plot_h / 2, y_title, extra=f' transform="rotate(-90 12 {top + plot_h / 2})"'
        )
    )
    body += _legend(left, observed_label, expected_label, None if mark is None else mark[1])
    return _svg(width, height, label, body)


def _y_grid(plot: _Plot, ticks: Sequence[float]) -> list[str]:
    """A light line across the plot at each tick of the y axis, labelled on the left."""
    body = []
    for tick in ticks:
        y = plot.y(tick)
        body.append(
            f'<line x1="{plot.left}" y1="{y:.1f}" x2="{plot.left + plot.width}" y2="{y:.1f}" '
            f'stroke="#e3e6e1"/>'
        )
        body.append(_text(plot.left - 5, y + 4, f"{tick:,g}", "end"))
    return body


def _bars(
    plot: _Plot,
    labels: Sequence[str],
    observed: Sequence[float],
    expected: Sequence[float],
    at_edges: bool,
    names: tuple[str, str],
) -> list[str]:
    """A bar for each bin's observed count, its figures (and the expected one) as its title."""
    observed_label, expected_label = names
    body = []
    for k, (count, wanted) in enumerate(zip(observed, expected, strict=True)):
        x = plot.left + k * plot.slot
        name = f"{labels[k]}–{labels[k + 1]}" if at_edges else labels[k]
        body.append(
            f'<rect x="{x + plot.slot * 0.1:.1f}" y="{plot.y(count):.1f}" '
            f'width="{plot.slot * 0.8:.1f}" height="{plot.y(0) - plot.y(count):.1f}" '
            f'fill="{BAR}"><title>{e(name)}: {count:g} '
            f"{e(observed_label)}, {wanted:.1f} {e(expected_label)}</title></rect>"
        )
    return body


def _expected_line(plot: _Plot, expected: Sequence[float]) -> str:
    """The expected counts as steps, level across each bin."""
    left, slot = plot.left, plot.slot
    line = " ".join(
        f"{left + k * slot:.1f},{plot.y(w):.1f} {left + (k + 1) * slot:.1f},{plot.y(w):.1f}"
        for k, w in enumerate(expected)
    )
    return f'<polyline points="{line}" fill="none" stroke="{EXPECTED}" stroke-width="2"/>'


def _x_labels(plot: _Plot, labels: Sequence[str], bins: int, at_edges: bool) -> list[str]:
    """The bins' labels under the axis (or their edges'), as many as fit without crowding."""
    left, slot = plot.left, plot.slot
    positions = (
        [left + k * slot for k in range(bins + 1)]
        if at_edges
        else [left + (k + 0.5) * slot for k in range(bins)]
    )
    every = max(1, round(30 / slot)) if not at_edges else max(1, round(24 / slot))
    y = plot.y(0) + 14
    return [_text(x, y, labels[k]) for k, x in enumerate(positions) if k % every == 0]


def _legend(left: float, observed: str, expected: str, mark: str | None) -> list[str]:
    """The key above the plot: the bars, the expected line and the mark, when there is one."""
    swatches = [
        (f'<rect x="0" y="8" width="12" height="10" fill="{BAR}"/>', observed),
        (f'<line x1="0" y1="13" x2="16" y2="13" stroke="{EXPECTED}" stroke-width="2"/>', expected),
    ]
    if mark is not None:
        swatches.append(
            (f'<line x1="6" y1="6" x2="6" y2="20" stroke="{INK}" stroke-dasharray="3 3"/>', mark)
        )
    body = []
    at = left + 4.0
    for (
        swatch,
        text,
    ) in swatches:  # left to right, each as wide as its words (about 6.5 px a letter)
        body.append(
            f'<g transform="translate({at:.1f} 0)">{swatch}{_text(20, 17, text, "start")}</g>'
        )
        at += 20 + 6.5 * len(text) + 16
    return body
