"""The RNG report as a lab reads it (``thirteen rng test``), and the provenance it and the
collectors' headers state: the software (package version, git commit) and the date."""

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

from domain.fairness.statistics import ALPHA, Outcome

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
    verdict = "PASS" if outcome.passed else "FAIL"
    title = f"{number}. {outcome.name} "
    lines = [title + "." * (WIDTH - len(title) - len(verdict) - 1) + " " + verdict]
    if outcome.df is None:
        statistic = f"z = {outcome.statistic:+.3f} (standard normal)"
        critical = f"|z| > {outcome.critical:.3f} fails"
        p = f"{_p(outcome.p_value)} (two-sided)"
    else:
        statistic = f"chi-square {outcome.statistic:,.2f} with {outcome.df} degrees of freedom"
        critical = f"{outcome.critical:,.2f} (a larger statistic fails)"
        p = f"{_p(outcome.p_value)} (upper tail)"
    for name, text in (
        ("checks", outcome.checks),
        ("sample", outcome.sample),
        ("statistic", statistic),
        ("details", outcome.details),
        ("p-value", p),
        ("critical", f"{critical}, at {1 - ALPHA:.0%}"),
    ):
        lines.append(_field(f"   {name}", text, column=15))
    return lines


def render(
    provenance: Provenance,
    source: str,
    header: Sequence[str],
    sample: str,
    outcomes: Sequence[Outcome],
    seconds: tuple[float, float],
) -> str:
    """The report: what was tested on what, each test's figures and verdict, the result."""
    passed = sum(outcome.passed for outcome in outcomes)
    lines = [
        "thirteen RNG report: the provably fair deal (docs/rules.md R12.3-R12.5)",
        "",
        _field("date", provenance.date),
        _field("software", provenance.software),
        _field("code path", CODE_PATH),
        _field("source", source),
    ]
    lines += [f"{'file says' if i == 0 else '':<12}{line}" for i, line in enumerate(header)]
    lines += [
        _field("sample", sample),
        _field(
            "level",
            f"{1 - ALPHA:.0%} confidence: a test fails when its p-value is below {ALPHA}",
        ),
        _field("time", f"collecting {seconds[0]:.1f} s, testing {seconds[1]:.1f} s"),
        "",
    ]
    for number, outcome in enumerate(outcomes, start=1):
        lines += [*_outcome(number, outcome), ""]
    verdict = "PASS" if passed == len(outcomes) else "FAIL"
    lines += [
        f"RESULT: {verdict}, {passed} of {len(outcomes)} tests pass at {1 - ALPHA:.0%} confidence.",
        "",
        textwrap.fill(
            f"Each test of a fair generator fails by chance once in {round(1 / ALPHA)} runs, so "
            f"a run of {len(outcomes)} tests shows some FAIL about "
            f"{1 - (1 - ALPHA) ** len(outcomes):.0%} of the time: confirm a FAIL with fresh "
            "runs, or by the spread of p-values over many (uniform on 0-1 for a fair one).",
            WIDTH,
        ),
    ]
    return "\n".join(lines) + "\n"
