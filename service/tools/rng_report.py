"""The RNG report as a lab reads it (``thirteen rng test``), and the provenance it and the
collectors' headers state: the software (package version, git commit) and the date.

One run's result is one ``RngRun``; the text report (``render``) and the HTML one
(``rng_html``) both write it, with the figures ``numbers``, ``described`` and ``Repeats`` word
and count once.
"""

from __future__ import annotations

import os
import platform
import subprocess
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

from domain.fairness.distributions import ALPHA
from domain.fairness.statistics import Outcome

WIDTH = 96
CODE_PATH = (
    "domain.fairness.shuffle.deal, as domain.dealing.deal_record calls it: R12.3 words from "
    "HMAC-SHA256, R12.4 Fisher–Yates with rejection, R12.5 four seats of 13 cards; the words are "
    "the ones that very call draws (its `drawn` list), the decks the hands it returns"
)


@dataclass(frozen=True)
class Provenance:
    date: str
    software: str

    @classmethod
    def now(cls) -> Provenance:
        date = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        python = f"Python {platform.python_version()} on {platform.system()} {platform.machine()}"
        return cls(date, f"{_version()}; {python}")


def _version() -> str:
    try:
        version = f"thirteen {metadata.version('thirteen')}"
    except metadata.PackageNotFoundError:
        version = "thirteen (not installed)"
    checkout = Path(__file__).resolve().parents[2]
    commit = _git(checkout, "rev-parse", "HEAD")
    if commit is None:
        return f"{version}, not from a git checkout"
    # Reading only: no optional lock on the index, which others may be writing.
    changes = _git(checkout, "status", "--porcelain", "--untracked-files=no")
    dirty = " with uncommitted changes" if changes else ""
    return f"{version}, git commit {commit}{dirty}"


def _git(checkout: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(checkout), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


@dataclass(frozen=True)
class Repeats:
    """Further samples of the same size, tested as the first (``rng test --repeats``):
    ``p_values[i]`` holds test i's p-value on each, in the order of the run's outcomes."""

    count: int
    each: str
    seconds: float
    p_values: tuple[tuple[float, ...], ...]

    def spread(self, first: Outcome, test: int) -> tuple[int, list[int]]:
        """Test ``test``'s p-values over every sample, ``first`` (the run's) included: how
        many fall below ``ALPHA``, and how many in each tenth of 0–1."""
        values = (first.p_value, *self.p_values[test])
        tenths = [0] * 10
        for value in values:
            tenths[min(int(value * 10), 9)] += 1
        return sum(value < ALPHA for value in values), tenths


@dataclass(frozen=True)
class RngRun:
    """What one ``rng test`` found: what was tested on what, each test's outcome, and the
    further samples' p-values when asked for."""

    provenance: Provenance
    source: str
    header: Sequence[str]
    sample: str
    outcomes: Sequence[Outcome]
    seconds: tuple[float, float]
    repeats: Repeats | None = None

    @property
    def passed(self) -> int:
        return sum(outcome.passed for outcome in self.outcomes)

    @property
    def verdict(self) -> str:
        return "PASS" if self.passed == len(self.outcomes) else "FAIL"


@dataclass(frozen=True)
class Numbers:
    """A test's figures as both reports write them."""

    verdict: str
    statistic: str
    p_value: str
    critical: str


def numbers(outcome: Outcome) -> Numbers:
    """``outcome``'s statistic, p-value and critical value, worded."""
    if outcome.df is None:
        statistic = f"z = {outcome.statistic:+.3f} (standard normal)"
        critical = f"|z| > {outcome.critical:.3f} fails"
        p = f"{_p(outcome.p_value)} (two-sided)"
    else:
        statistic = f"chi-square {outcome.statistic:,.2f} with {outcome.df} degrees of freedom"
        critical = f"{outcome.critical:,.2f} (a larger statistic fails)"
        p = f"{_p(outcome.p_value)} (upper tail)"
    return Numbers("PASS" if outcome.passed else "FAIL", statistic, p, critical)


def described(outcome: Outcome) -> tuple[tuple[str, str], ...]:
    """What both reports say of ``outcome`` under its title: each field's name and text."""
    shown = numbers(outcome)
    return (
        ("checks", outcome.checks),
        ("sample", outcome.sample),
        ("statistic", shown.statistic),
        ("details", outcome.details),
        ("p-value", shown.p_value),
        ("critical", f"{shown.critical}, at {1 - ALPHA:.0%}"),
    )


def level() -> str:
    return f"{1 - ALPHA:.0%} confidence: a test fails when its p-value is below {ALPHA}"


def repeats_summary(repeats: Repeats) -> str:
    samples = repeats.count + 1
    return (
        f"p-values over {samples} samples: this run's and {repeats.count} more of {repeats.each} "
        f"({repeats.seconds:.1f} s). A fair generator's are uniform on 0-1: "
        f"{samples / 10:.1f} expected in each tenth, {samples * ALPHA:.2f} below {ALPHA}. "
        "The result above is this run's sample alone."
    )


def tenths_line(below: int, tenths: Sequence[int], samples: int) -> str:
    """A test's p-values over the samples: how many below ``ALPHA``, how many in each tenth."""
    return f"{below} of {samples} below {ALPHA}; by tenth: {' '.join(map(str, tenths))}"


def caution(tests: int) -> str:
    return (
        f"Each test of a fair generator fails by chance once in {round(1 / ALPHA)} runs, so "
        f"a run of {tests} tests shows some FAIL about "
        f"{1 - (1 - ALPHA) ** tests:.0%} of the time: confirm a FAIL with fresh "
        "runs, or by the spread of p-values over many (uniform on 0-1 for a fair one)."
    )


def _field(name: str, text: str, column: int = 12) -> str:
    return textwrap.fill(
        text,
        WIDTH,
        initial_indent=f"{name:<{column}}",
        subsequent_indent=" " * column,
        break_on_hyphens=False,
    )


def _p(value: float) -> str:
    if value == 0:
        return "below 1e-300"
    return f"{value:.4f}" if value >= 1e-4 else f"{value:.2e}"


def _outcome(number: int, outcome: Outcome) -> list[str]:
    verdict = numbers(outcome).verdict
    title = f"{number}. {outcome.name} "
    lines = [title + "." * (WIDTH - len(title) - len(verdict) - 1) + " " + verdict]
    for name, text in described(outcome):
        lines.append(_field(f"   {name}", text, column=15))
    return lines


def _repeated(run: RngRun, repeats: Repeats) -> list[str]:
    lines = ["REPEATED SAMPLES", textwrap.fill(repeats_summary(repeats), WIDTH), ""]
    for test, outcome in enumerate(run.outcomes):
        below, tenths = repeats.spread(outcome, test)
        title = f"{test + 1}. {outcome.name}"
        lines.append(f"{title:<47}{tenths_line(below, tenths, repeats.count + 1)}")
    return [*lines, ""]


def render(run: RngRun) -> str:
    """The report: what was tested on what, each test's figures and verdict, the result."""
    lines = [
        "thirteen RNG report: the provably fair deal (docs/rules.md R12.3-R12.5)",
        "",
        _field("date", run.provenance.date),
        _field("software", run.provenance.software),
        _field("code path", CODE_PATH),
        _field("source", run.source),
    ]
    lines += [f"{'file says' if i == 0 else '':<12}{line}" for i, line in enumerate(run.header)]
    lines += [
        _field("sample", run.sample),
        _field("level", level()),
        _field("time", f"collecting {run.seconds[0]:.1f} s, testing {run.seconds[1]:.1f} s"),
        "",
    ]
    for number, outcome in enumerate(run.outcomes, start=1):
        lines += [*_outcome(number, outcome), ""]
    if run.repeats is not None:
        lines += _repeated(run, run.repeats)
    lines += [
        f"RESULT: {run.verdict}, {run.passed} of {len(run.outcomes)} tests pass at "
        f"{1 - ALPHA:.0%} confidence.",
        "",
        textwrap.fill(caution(len(run.outcomes)), WIDTH),
    ]
    return "\n".join(lines) + "\n"
