"""``thirteen rng collect`` and ``thirteen rng test``: the RNG kit for testing labs.

Both draw deals through the production code path (``rng_collect``, which also writes the
files). The seeds are fresh and drawn as production draws them (``Seeds.fresh``), unless
``--fixed-seed`` asks for a reproducible run. ``rng test`` runs ``domain.fairness.statistics``'
tests on a sample collected now or read from a text file ``rng collect`` wrote (``rng_sample``)
and prints the report (``rng_report``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from domain.fairness.statistics import DECK_SIZE, MIN_EXPECTED, WORD_BINS, Outcome
from domain.fairness.statistics import deck_tests as run_deck_tests
from domain.fairness.statistics import word_tests as run_word_tests
from service.tools.rng_collect import Seeds, write_deals, write_raw_binary, write_raw_text
from service.tools.rng_report import Provenance, render
from service.tools.rng_sample import Sample, SampleError, collect_sample, read_sample
from service.tools.terminal import EXIT_BAD_INPUT

MIN_DEALS = MIN_EXPECTED * DECK_SIZE  # 5 expected per card × position cell
MIN_WORDS = MIN_EXPECTED * WORD_BINS
MAX_TEST_CARDS = 20_000_000  # held in memory: a few hundred MB and about 90 s here
EXIT_FAILED = 1


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
    """``thirteen rng test [--cards N | --file FILE] [--out FILE]``: the report on stdout."""
    provenance = Provenance.now()
    started = time.perf_counter()
    if args.file is not None:
        if args.fixed_seed is not None:
            return _refuse("--fixed-seed is for collecting deals, not with --file")
        try:
            sample = read_sample(args.file)
        except SampleError as error:
            return _refuse(str(error))
    else:
        if not MIN_DEALS * DECK_SIZE <= args.cards <= MAX_TEST_CARDS:
            return _refuse(
                f"--cards must be from {MIN_DEALS * DECK_SIZE:,} ({MIN_DEALS} deals: "
                f"{MIN_EXPECTED} expected per card × position cell) to {MAX_TEST_CARDS:,}"
            )
        seeds = Seeds.from_key(args.fixed_seed) if args.fixed_seed else Seeds.fresh()
        sample = collect_sample(seeds, args.cards)
    if sample.decks and len(sample.decks) < MIN_DEALS:
        return _refuse(f"{sample.source}: the tests need at least {MIN_DEALS} deals")
    if not sample.decks and len(sample.words) < MIN_WORDS:
        return _refuse(f"{sample.source}: the tests need at least {MIN_WORDS} words")
    collected = time.perf_counter()
    outcomes: list[Outcome] = []
    if sample.decks:
        outcomes += run_deck_tests(sample.decks)
    if sample.words:
        outcomes += run_word_tests(sample.words)
    timing = (collected - started, time.perf_counter() - collected)
    report = render(
        provenance, sample.source, sample.header, _sample_line(sample), outcomes, timing
    )
    if args.out is not None:
        try:
            args.out.write_text(report, encoding="utf-8")
        except OSError as error:
            return _refuse(f"cannot write {args.out}: {error.strerror}")
    sys.stdout.write(report)
    return 0 if all(outcome.passed for outcome in outcomes) else EXIT_FAILED


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
