"""``thirteen rng collect`` and ``thirteen rng test``: the RNG kit for testing labs.

Both draw deals through the production code path (``rng_collect``, which also writes the
files). The seeds are fresh and drawn as production draws them (``Seeds.fresh``), unless
``--fixed-seed`` asks for a reproducible run. ``rng test`` runs ``domain.fairness.statistics``'
tests on a sample collected now or read from a text file ``rng collect`` wrote (``rng_sample``),
on as many further samples as ``--repeats`` asks, and prints the report (``rng_report``), also
as a page (``rng_html``); ``terminal.Eta`` shows the progress of long runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from domain.fairness.statistics import DECK_SIZE, MIN_EXPECTED, WORD_BINS, Outcome
from domain.fairness.statistics import deck_tests as run_deck_tests
from domain.fairness.statistics import word_tests as run_word_tests
from service.tools.rng_collect import (
    Seeds,
    deals,
    write_deals,
    write_raw_binary,
    write_raw_text,
)
from service.tools.rng_html import render_html
from service.tools.rng_report import Provenance, Repeats, RngRun, render
from service.tools.rng_sample import Sample, SampleError, collect_sample, read_sample
from service.tools.terminal import EXIT_BAD_INPUT, Eta

MIN_DEALS = MIN_EXPECTED * DECK_SIZE  # 5 expected per card × position cell
MIN_WORDS = MIN_EXPECTED * WORD_BINS
MAX_TEST_CARDS = 20_000_000  # held in memory: a few hundred MB and about 90 s here
EXIT_FAILED = 1
TEST_SHARE = 0.7
"""Testing a sample takes about this share of the time dealing it took (1.7 s against 2.4 s
for 10^6 cards here): the weight of testing in the progress shown."""


def collect(args: argparse.Namespace) -> int:
    """``thirteen rng collect --raw N | --deals N [--binary] [--out FILE]``."""
    if args.binary and args.raw is None:
        print("thirteen rng collect: --binary is for --raw words", file=sys.stderr)
        return EXIT_BAD_INPUT
    seeds = Seeds.from_key(args.fixed_seed) if args.fixed_seed else Seeds.fresh()
    provenance = Provenance.now()
    try:
        if args.binary:
            with _output(args.out, binary=True) as out:
                write_raw_binary(out, seeds, args.raw)
        elif args.raw is not None:
            with _output(args.out, binary=False) as out:
                write_raw_text(out, seeds, args.raw, provenance)
        else:
            with _output(args.out, binary=False) as out:
                write_deals(out, seeds, args.deals, provenance)
    except OSError as error:
        if args.out is None:
            raise  # standard output: a closed pipe or a full disk, as every command's (cli.main)
        print(f"thirteen rng collect: cannot write {args.out}: {error.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
    what = (
        f"{args.raw:,} raw words"
        if args.raw is not None
        else f"{args.deals:,} deal{'s' * (args.deals != 1)}"
    )
    where = f" into {args.out}" if args.out else ""
    print(f"thirteen rng collect: {what}{where}; seeds {seeds.brief()}", file=sys.stderr)
    return 0


@contextmanager
def _output(path: Path | None, *, binary: bool) -> Iterator[Any]:
    """The file at ``path``, else standard output (left open)."""
    if path is None:
        yield sys.stdout.buffer if binary else sys.stdout
        return
    with open(path, "wb") if binary else open(path, "w", encoding="utf-8") as out:
        yield out


def run_tests(args: argparse.Namespace) -> int:
    """``thirteen rng test [--cards N | --file FILE] [--repeats K] [--out FILE] [--html FILE]``:
    the report on stdout."""
    provenance = Provenance.now()
    started = time.perf_counter()
    refusal = _refusal(args)
    if refusal is not None:
        return _refuse(refusal)
    try:
        sample, eta, again = _first_sample(args)
    except SampleError as error:
        return _refuse(str(error))
    if sample.decks and len(sample.decks) < MIN_DEALS:
        return _refuse(f"{sample.source}: the tests need at least {MIN_DEALS} deals")
    if not sample.decks and len(sample.words) < MIN_WORDS:
        return _refuse(f"{sample.source}: the tests need at least {MIN_WORDS} words")
    collected = time.perf_counter()
    outcomes = _test(sample, eta)
    tested = time.perf_counter()
    further = None
    if again is not None and args.repeats:
        p_values = _p_values(args.repeats, again, eta, len(outcomes))
        each = f"{len(sample.decks):,} deals each, the next deals of the same seeds"
        further = Repeats(args.repeats, each, time.perf_counter() - tested, p_values)
    run = RngRun(
        provenance,
        sample.source,
        sample.header,
        _sample_line(sample),
        outcomes,
        (collected - started, tested - collected),
        further,
    )
    report = render(run)
    failed = _write(run, report, args.out, args.html)
    sys.stdout.write(report)
    if failed is not None:
        sys.stdout.flush()
        return _refuse(failed)
    return 0 if run.verdict == "PASS" else EXIT_FAILED


def _refusal(args: argparse.Namespace) -> str | None:
    """Why the options make no run, said before a deal is dealt or a sample read."""
    for path in (args.out, args.html):
        unwritable = _unwritable(path)
        if unwritable is not None:
            return unwritable
    clash = _same_file(args.file, args.out, args.html)
    if clash is not None:
        return clash
    if args.file is not None:
        if args.fixed_seed is not None:
            return "--fixed-seed is for collecting deals, not with --file"
        if args.repeats:
            return "--repeats deals further samples, not with --file (one sample)"
    elif not MIN_DEALS * DECK_SIZE <= args.cards <= MAX_TEST_CARDS:
        return (
            f"--cards must be from {MIN_DEALS * DECK_SIZE:,} ({MIN_DEALS} deals: "
            f"{MIN_EXPECTED} expected per card × position cell) to {MAX_TEST_CARDS:,}"
        )
    return None


def _first_sample(args: argparse.Namespace) -> tuple[Sample, Eta, Callable[[], Sample] | None]:
    """The sample to test, read from ``--file`` (raises ``SampleError``) or dealt now; the
    progress of the whole run; and, when dealt, what deals the next sample of the same size
    (the same seeds' next deals, for ``--repeats``)."""
    if args.file is not None:
        sample = read_sample(args.file)
        return sample, Eta("thirteen rng test", _test_units(sample), forced=args.progress), None
    repeats = args.repeats or 0
    each = -(-args.cards // DECK_SIZE)
    eta = Eta("thirteen rng test", (1 + repeats) * each * (1 + TEST_SHARE), forced=args.progress)
    seeds = Seeds.from_key(args.fixed_seed) if args.fixed_seed else Seeds.fresh()
    stream = deals(seeds)

    def again() -> Sample:
        return collect_sample(seeds, args.cards, stream, eta.advance)

    return again(), eta, again


def _p_values(
    count: int, again: Callable[[], Sample], eta: Eta, tests: int
) -> tuple[tuple[float, ...], ...]:
    """``count`` further samples dealt and tested as the first: each test's p-values."""
    p_values: list[list[float]] = [[] for _ in range(tests)]
    for _ in range(count):
        for test, outcome in enumerate(_test(again(), eta)):
            p_values[test].append(outcome.p_value)
    return tuple(map(tuple, p_values))


def _write(run: RngRun, report: str, out: Path | None, html: Path | None) -> str | None:
    """The report written to ``out`` and the page to ``html``, those given; why one could not
    be, if one could not (every other is still written: a long run is not lost)."""
    failed = None
    for path, text in ((out, report), (html, None)):
        if path is None:
            continue
        try:
            path.write_text(render_html(run) if text is None else text, encoding="utf-8")
        except OSError as error:
            failed = failed or f"cannot write {path}: {error.strerror}"
    return failed


def _test_units(sample: Sample) -> float:
    """Testing ``sample``, in deals' worth of dealing time (``TEST_SHARE``)."""
    return TEST_SHARE * (len(sample.decks) or len(sample.words) / (DECK_SIZE - 1))


def _test(sample: Sample, eta: Eta) -> list[Outcome]:
    outcomes: list[Outcome] = []
    units = _test_units(sample)
    if sample.decks:
        outcomes += run_deck_tests(sample.decks)
        eta.advance(units / 2 if sample.words else units)
    if sample.words:
        outcomes += run_word_tests(sample.words)
        eta.advance(units / 2 if sample.decks else units)
    return outcomes


def _same_file(sample: Path | None, out: Path | None, html: Path | None) -> str | None:
    """Why two of ``--file``, ``--out`` and ``--html`` cannot be what they name (one file
    under two names: a report would be written over the sample, or over the other report)."""
    named = (("--file", sample), ("--out", out), ("--html", html))
    given = [(flag, path) for flag, path in named if path is not None]
    for first, (flag, path) in enumerate(given):
        for other, path_other in given[first + 1 :]:
            same = (
                os.path.samefile(path, path_other)
                if path.exists() and path_other.exists()
                else path.resolve() == path_other.resolve()
            )
            if same:
                return f"{flag} and {other} name the same file ({path}): give each its own"
    return None


def _unwritable(path: Path | None) -> str | None:
    """Why a report cannot be written at ``path``, said before a long run rather than after."""
    if path is None:
        return None
    if path.is_dir():
        return f"cannot write {path}: it is a directory"
    folder = path.parent
    if not folder.is_dir():
        return f"cannot write {path}: {folder} is not a directory"
    if not os.access(folder, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        return f"cannot write {path}: permission denied"
    return None


def _sample_line(sample: Sample) -> str:
    parts = []
    if sample.decks:
        parts.append(f"{len(sample.decks):,} deals ({len(sample.decks) * DECK_SIZE:,} cards)")
    if sample.words:
        drawn = "the words they drew" if sample.decks else "raw words"
        rejected = f", {sample.rejected} rejected by R12.4" if sample.rejected is not None else ""
        parts.append(f"{drawn}: {len(sample.words):,}{rejected}")
    return "; ".join(parts)


def _refuse(message: str) -> int:
    print(f"thirteen rng test: {message}", file=sys.stderr)
    return EXIT_BAD_INPUT
