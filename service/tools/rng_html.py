"""``thirteen rng test --html``: the RNG report as one self-contained page, for a lab to read
and print. It writes the same ``RngRun`` as the text report, with the same figures
(``rng_report.numbers``), and draws what the tests counted (``service.report.plots``): the
card × position table as a heat map of observed ÷ expected, the runs against their expected
distribution, and each test's p-values over the repeated samples against the uniform line.
Inline CSS and SVG only, the explain report's frame and style (``service.report.html``);
every text goes through ``html.escape``.
"""

from __future__ import annotations

from math import sqrt

from domain.fairness.distributions import ALPHA
from domain.fairness.statistics import Histogram, Outcome, Table
from domain.rules.cards import Card
from service.report.html import CSS
from service.report.html_labels import e
from service.report.plots import Axis, heat_map, histogram
from service.tools.rng_report import (
    CODE_PATH,
    Repeats,
    RngRun,
    caution,
    described,
    level,
    numbers,
    repeats_summary,
    tenths_line,
)

RNG_CSS = """
table.params { border-collapse: collapse; font-size: 14px; }
table.params th { text-align: left; vertical-align: top; padding: 3px 14px 3px 0;
  color: var(--muted); font-weight: 600; white-space: nowrap; }
table.params td { padding: 3px 0; overflow-wrap: anywhere; }
table.tests { border-collapse: collapse; width: 100%; font-size: 14px; }
table.tests th, table.tests td { padding: 5px 8px; border-bottom: 1px solid var(--line);
  text-align: left; vertical-align: top; }
table.tests td.verdict { font-weight: 700; }
.verdict.PASS { color: var(--win); } .verdict.FAIL { color: var(--lose); }
.plots { display: grid; grid-template-columns: repeat(auto-fill, minmax(380px, 1fr));
  gap: 14px 18px; }
figure { margin: 0; }
figcaption { font-size: 13px; color: var(--muted); margin-top: 2px; }
figcaption b { color: var(--ink); }
.details dt { font-weight: 600; margin-top: 10px; }
.details dd { margin: 2px 0 0 14px; font-size: 14px; }
.big { font-size: 20px; font-weight: 700; }
@media print {
  body { background: #fff; }
  header { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  section { box-shadow: none; border: 1px solid var(--line); break-inside: avoid; }
}
"""

SIGMAS = 4
"""The heat map's colour scale spans this many standard deviations of a fair cell each way."""


def render_html(run: RngRun) -> str:
    """The whole page."""
    body = [
        _header(run),
        _parameters(run),
        _verdicts(run),
        _heat_map(run),
        _runs(run),
        _p_values(run),
        _details(run),
        "</main>",
    ]
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>thirteen RNG report — {e(run.verdict)}, {e(run.provenance.date)}</title>"
        f"<style>{CSS}{RNG_CSS}</style></head><body>{''.join(body)}</body></html>\n"
    )


def _header(run: RngRun) -> str:
    chips = [
        f"RESULT {run.verdict}: {run.passed} of {len(run.outcomes)} tests pass",
        run.provenance.date,
        run.sample,
        f"{1 - ALPHA:.0%} confidence",
    ]
    return (
        '<header><h1>thirteen RNG report <span lang="zh">十三水</span></h1>'
        '<div class="meta">'
        + "".join(f'<span class="chip">{e(chip)}</span>' for chip in chips)
        + "</div></header><main>"
    )


def _parameters(run: RngRun) -> str:
    rows = [
        ("date", run.provenance.date),
        ("software", run.provenance.software),
        ("code path", CODE_PATH),
        ("seeds, source", run.source),
        *(("file says", line) for line in run.header),
        ("sample", run.sample),
        ("repeats", repeats_summary(run.repeats) if run.repeats else "none (--repeats 0)"),
        ("level", level()),
        ("time", f"collecting {run.seconds[0]:.1f} s, testing {run.seconds[1]:.1f} s"),
    ]
    cells = "".join(f"<tr><th>{e(name)}</th><td>{e(text)}</td></tr>" for name, text in rows)
    return f'<section><h2>The run</h2><table class="params">{cells}</table></section>'


def _verdicts(run: RngRun) -> str:
    head = (
        "<tr><th>#</th><th>test</th><th>statistic</th><th>p-value</th>"
        f"<th>critical, at {1 - ALPHA:.0%}</th><th>verdict</th></tr>"
    )
    rows = []
    for number, outcome in enumerate(run.outcomes, start=1):
        shown = numbers(outcome)
        rows.append(
            f"<tr><td>{number}</td><td>{e(outcome.name)}</td><td>{e(shown.statistic)}</td>"
            f"<td>{e(shown.p_value)}</td><td>{e(shown.critical)}</td>"
            f'<td class="verdict {shown.verdict}">{shown.verdict}</td></tr>'
        )
    result = (
        f'<p class="big verdict {run.verdict}">RESULT: {run.verdict}, {run.passed} of '
        f"{len(run.outcomes)} tests pass at {1 - ALPHA:.0%} confidence.</p>"
    )
    return (
        f"<section><h2>Verdicts</h2>{result}<p>{e(level())}.</p>"
        f'<table class="tests">{head}{"".join(rows)}</table>'
        f"<p>{e(caution(len(run.outcomes)))}</p></section>"
    )


def _heat_map(run: RngRun) -> str:
    found = [(o, o.figure) for o in run.outcomes if isinstance(o.figure, Table)]
    if not found:
        return ""
    outcome, table = found[0]
    n = table.size
    ratios = [[table.counts[p * n + c] / table.expected for p in range(n)] for c in range(n)]
    tips = [
        [
            f"{_name(c, n)} at position {p}: dealt {table.counts[p * n + c]:,} times, "
            f"{table.expected:,.1f} expected (× {ratios[c][p]:.3f})"
            for p in range(n)
        ]
        for c in range(n)
    ]
    sigma = sqrt((1 - 1 / n) / table.expected)  # a cell's relative standard deviation
    spread = min(1.0, -(-SIGMAS * sigma * 100 // 1) / 100)
    low = min(min(row) for row in ratios)
    high = max(max(row) for row in ratios)
    seats = n // 13 if n % 13 == 0 else 0
    columns = Axis(
        "dealt position (R12.5: seat k holds 13k … 13k + 12)",
        [(p, str(p), "") for p in range(0, n, 13 if seats else 10)] + [(n - 1, str(n - 1), "")],
        [(13 * k, 13 * k + 12, f"seat {k}") for k in range(seats)],
    )
    rows = Axis(
        "card (R1.4 order)",
        [(c, _name(c, n), "#c62828" if n == 52 and Card(c).is_red else "") for c in range(n)],
    )
    svg = heat_map(
        ratios,
        tips,
        rows=rows,
        columns=columns,
        centre=1.0,
        spread=spread,
        scale_title="observed ÷ expected",
        label=f"{outcome.name}: observed ÷ expected by card and position",
    )
    caption = (
        f"<b>{e(outcome.name)}</b> ({e(numbers(outcome).verdict)}): how often each card was "
        f"dealt at each position, divided by the {table.expected:,.1f} a fair deal expects. "
        f"The colours span ±{SIGMAS} standard deviations of a fair cell (±{spread:.2f}); "
        f"the ratios run from {low:.3f} to {high:.3f}. A fair deal shows noise without "
        "stripes: a row, column or diagonal of one colour is a bias."
    )
    return (
        f"<section><h2>Card × position</h2><figure>{svg}<figcaption>{caption}</figcaption>"
        "</figure></section>"
    )


def _name(card: int, n: int) -> str:
    return Card(card).symbol() if n == 52 else str(card)


def _runs(run: RngRun) -> str:
    figures = []
    for outcome in run.outcomes:
        if not isinstance(outcome.figure, Histogram):
            continue
        shown = _trimmed(outcome.figure)
        svg = histogram(
            [str(v) for v in shown.values],
            shown.observed,
            shown.expected,
            x_title=shown.axis,
            y_title="how often",
            observed_label="observed",
            expected_label="expected",
            label=f"{outcome.name}: observed against expected",
        )
        figures.append(
            f"<figure>{svg}<figcaption><b>{e(outcome.name)}</b> "
            f"({e(numbers(outcome).verdict)}): {e(outcome.details)}</figcaption></figure>"
        )
    if not figures:
        return ""
    return f'<section><h2>Runs</h2><div class="plots">{"".join(figures)}</div></section>'


def _trimmed(figure: Histogram) -> Histogram:
    """The values a plot shows: from the first to the last seen or expected at least ½."""
    kept = [
        k
        for k, (seen, wanted) in enumerate(zip(figure.observed, figure.expected, strict=True))
        if seen or wanted >= 0.5
    ]
    first, last = (kept[0], kept[-1]) if kept else (0, len(figure.values) - 1)
    return Histogram(
        figure.axis,
        figure.values[first : last + 1],
        figure.observed[first : last + 1],
        figure.expected[first : last + 1],
    )


def _p_values(run: RngRun) -> str:
    if run.repeats is None:
        return (
            "<section><h2>p-values over repeated samples</h2><p>This run tested one sample "
            "(a file, or --repeats 0): give --repeats K to test K more and see each test's "
            "p-values against the uniform distribution a fair generator gives.</p></section>"
        )
    figures = [
        _p_value_plot(run.repeats, outcome, test) for test, outcome in enumerate(run.outcomes)
    ]
    return (
        f"<section><h2>p-values over repeated samples</h2><p>{e(repeats_summary(run.repeats))}</p>"
        f'<div class="plots">{"".join(figures)}</div></section>'
    )


def _p_value_plot(repeats: Repeats, outcome: Outcome, test: int) -> str:
    below, tenths = repeats.spread(outcome, test)
    samples = repeats.count + 1
    svg = histogram(
        [f"{k / 10:g}" for k in range(11)],
        tenths,
        [samples / 10] * 10,
        x_title="p-value",
        y_title="samples",
        observed_label="samples",
        expected_label="uniform (fair)",
        label=f"{outcome.name}: p-values over {samples} samples",
        at_edges=True,
        mark=(ALPHA * 10, f"fails below {ALPHA}"),
        width=400,
        height=210,
    )
    return (
        f"<figure>{svg}<figcaption><b>{test + 1}. {e(outcome.name)}</b>: <br>"
        f"{e(tenths_line(below, tenths, samples))}</figcaption></figure>"
    )


def _details(run: RngRun) -> str:
    items = []
    for number, outcome in enumerate(run.outcomes, start=1):
        verdict = numbers(outcome).verdict
        fields = "".join(f"<dd><b>{name}</b> {e(text)}</dd>" for name, text in described(outcome))
        items.append(
            f'<dt>{number}. {e(outcome.name)} — <span class="verdict {verdict}">{verdict}</span>'
            f"</dt>{fields}"
        )
    return f'<section class="details"><h2>The tests</h2><dl>{"".join(items)}</dl></section>'
