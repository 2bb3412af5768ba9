"""``thirteen rng collect`` and ``thirteen rng test``: the RNG kit for testing labs
(``service.tools.rng``)."""

from __future__ import annotations

from pathlib import Path

from service.entrypoints.options import Commands, Parser
from service.tools import rng


def register(commands: Commands) -> None:
    """``rng collect`` and ``rng test``."""
    rng_kit = commands.add_parser(
        "rng", help="the RNG kit for testing labs: collect raw words or deals, run the tests"
    )
    rng_tasks = rng_kit.add_subparsers(dest="task", required=True, parser_class=Parser)
    collect = rng_tasks.add_parser(
        "collect", help="raw 32-bit words or dealt hands from the production shuffle (R12)"
    )
    wanted = collect.add_mutually_exclusive_group(required=True)
    wanted.add_argument(
        "--raw", type=rng.count, metavar="N", help="N words as drawn, before scaling (R12.3)"
    )
    wanted.add_argument(
        "--deals", type=rng.count, metavar="N", help="N deals to four seats, one per line"
    )
    collect.add_argument(
        "--binary",
        action="store_true",
        help="raw words as 4 big-endian bytes each, nothing else (NIST SP 800-22, dieharder)",
    )
    collect.add_argument("--out", type=Path, metavar="FILE", help="default: standard output")
    tester = rng_tasks.add_parser(
        "test", help="frequency, runs and serial correlation at 99%% confidence: a report"
    )
    sample = tester.add_mutually_exclusive_group()
    sample.add_argument(
        "--cards",
        type=rng.count,
        default=rng.DEFAULT_CARDS,
        metavar="N",
        help=f"deal at least N cards now (default {rng.DEFAULT_CARDS:,})",
    )
    sample.add_argument("--file", type=Path, help="test a text file `rng collect` wrote")
    tester.add_argument("--out", type=Path, metavar="FILE", help="also write the report there")
    for task in (collect, tester):
        task.add_argument(
            "--fixed-seed",
            type=rng.seed_key,
            metavar="HEX",
            help="a seed key (64 hex digits) for a reproducible run instead of fresh seeds",
        )
    collect.set_defaults(run=rng.collect)
    tester.set_defaults(run=rng.run_tests)
