"""``thirteen rng collect`` and ``thirteen rng test``: the RNG kit for testing labs
(``service.tools.rng``)."""

from __future__ import annotations

import argparse
from pathlib import Path

from domain.fairness.seeds import KEY_BYTES
from service.entrypoints.options import Commands, Parser

DEFAULT_CARDS = 1_000_000
"""``rng test --cards``: a million cards, about 5 s here."""
HTML_REPEATS = 20
"""``rng test --html``'s further samples unless ``--repeats`` says (``service.tools.rng``)."""
MAX_REPEATS = 1_000


def register(commands: Commands) -> None:
    """``rng collect`` and ``rng test``."""
    rng_kit = commands.add_parser(
        "rng", help="the RNG kit for testing labs: collect raw words or deals, run the tests"
    )
    rng_tasks = rng_kit.add_subparsers(dest="task", required=True, parser_class=Parser)
    collect = rng_tasks.add_parser(
        "collect", help="raw 32-bit words or dealt hands from the production shuffle (R12)"
    )
    _register_collect(collect)
    tester = rng_tasks.add_parser(
        "test", help="frequency, runs and serial correlation at 99%% confidence: a report"
    )
    _register_test(tester)
    for task in (collect, tester):
        task.add_argument(
            "--fixed-seed",
            type=seed_key,
            metavar="HEX",
            help="a seed key (64 hex digits) for a reproducible run instead of fresh seeds",
        )
    collect.set_defaults(run=collect_command)
    tester.set_defaults(run=test_command)


def _register_collect(collect: argparse.ArgumentParser) -> None:
    """``rng collect``'s own flags: what to collect, and where."""
    wanted = collect.add_mutually_exclusive_group(required=True)
    wanted.add_argument(
        "--raw", type=count, metavar="N", help="N words as drawn, before scaling (R12.3)"
    )
    wanted.add_argument(
        "--deals", type=count, metavar="N", help="N deals to four seats, one per line"
    )
    collect.add_argument(
        "--binary",
        action="store_true",
        help="raw words as 4 big-endian bytes each, nothing else (NIST SP 800-22, dieharder)",
    )
    collect.add_argument("--out", type=Path, metavar="FILE", help="default: standard output")


def _register_test(tester: argparse.ArgumentParser) -> None:
    """``rng test``'s own flags: the sample, its repeats, and the report's forms."""
    sample = tester.add_mutually_exclusive_group()
    sample.add_argument(
        "--cards",
        type=count,
        default=DEFAULT_CARDS,
        metavar="N",
        help=f"deal at least N cards now (default {DEFAULT_CARDS:,})",
    )
    sample.add_argument("--file", type=Path, help="test a text file `rng collect` wrote")
    tester.add_argument(
        "--repeats",
        type=repeats,
        metavar="K",
        help="also test K further samples of the same size (the next deals of the same seeds) "
        f"for the spread of each test's p-values (default {HTML_REPEATS} with --html, else 0)",
    )
    tester.add_argument("--out", type=Path, metavar="FILE", help="also write the report there")
    tester.add_argument(
        "--html",
        type=Path,
        metavar="FILE",
        help="also write the report as a page with its plots (inline SVG, self-contained)",
    )
    tester.add_argument(
        "--progress",
        action="store_true",
        help="show progress and the time left on stderr even when it is not a terminal",
    )


def collect_command(args: argparse.Namespace) -> int:
    from service.tools.rng import collect

    return collect(args)


def test_command(args: argparse.Namespace) -> int:
    from service.tools.rng import run_tests

    if args.repeats is None:  # a page's p-value plots want some; a file is one sample
        args.repeats = HTML_REPEATS if args.html and args.file is None else 0

    return run_tests(args)


def seed_key(text: str) -> bytes:
    """``--fixed-seed``: a seed key, 64 hex digits."""
    try:
        key = bytes.fromhex(text)
    except ValueError:
        key = b""
    if len(key) != KEY_BYTES:
        raise argparse.ArgumentTypeError(
            f"a fixed seed is a seed key of {2 * KEY_BYTES} hex digits, got {text[:80]!r}"
        )
    return key


def repeats(text: str) -> int:
    """``--repeats``: a whole number of further samples, 0 to ``MAX_REPEATS``."""
    digits = text.replace("_", "").replace(",", "")
    if not (digits.isascii() and digits.isdigit()) or int(digits) > MAX_REPEATS:
        raise argparse.ArgumentTypeError(
            f"expected a whole number of samples from 0 to {MAX_REPEATS:,}, got {text!r}"
        )
    return int(digits)


def count(text: str) -> int:
    """A positive whole number; ``1_000_000`` and ``1,000,000`` read as a million."""
    digits = text.replace("_", "").replace(",", "")
    if not (digits.isascii() and digits.isdigit()) or int(digits) == 0:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}")
    return int(digits)
