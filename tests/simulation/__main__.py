"""``make soak MINUTES=N``: the simulation for N minutes per store, in cycles.

Each cycle draws its own seed from the run's seed and plays, in turn, the concurrent driver
against a real ``thirteen serve`` (every phase restarted each way, random kills, cut
PostgreSQL sessions), on PostgreSQL the driver against three routing replicas (calls sent to
them in turn, one replica at a time restarted or killed: ``tests.simulation.replicas``), the
driver against the server in process (crashes, clock jumps) and a batch of state-machine
examples; every part ends with every check. Figures are printed per
part and in total; every failure is printed with the command that replays its part.

    .venv/bin/python -m tests.simulation --minutes 10 --store both
    .venv/bin/python -m tests.simulation --store sqlite --part real --seconds 60 --seed 123
    .venv/bin/python -m tests.simulation --store postgres --part replicas --seconds 60
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from tests.simulation.machine import run_machine
from tests.simulation.report import Figures, choose_seed
from tests.simulation.run import run_driver
from tests.support.stores import postgres_available, store_environ

PARTS = ("real", "replicas", "inprocess", "machine")
SECONDS = {"real": 60.0, "replicas": 60.0, "inprocess": 30.0, "machine": 0.0}
# of a short soak's minutes (the replicas part only on PostgreSQL: SQLite has one process)
SHARE = {"real": 0.35, "replicas": 0.25, "inprocess": 0.2, "machine": 0.0}
MACHINE_EXAMPLES = 10
MACHINE_STEPS = 50


def replay(kind: str, part: str, seconds: float, seed: int) -> str:
    return (
        f".venv/bin/python -m tests.simulation --store {kind} --part {part} "
        f"--seconds {seconds:g} --seed {seed}"
    )


def run_part(kind: str, part: str, seconds: float, seed: int, base: Path) -> tuple[Figures, str]:
    """One part of a cycle; returns its figures and its failure report ('' when none)."""
    where = replay(kind, part, seconds, seed)
    if part == "machine":
        try:
            figures = run_machine(
                kind,
                seed,
                base,
                examples=MACHINE_EXAMPLES,
                steps=MACHINE_STEPS,
                where=where,
                shrink=True,
            )
        except Exception as error:  # the failing (shrunk) program is in the notes
            notes = getattr(error, "__notes__", [])
            text = "\n".join([f"{type(error).__name__}: {error}", *notes])
            return Figures(), f"{text}\n{replay(kind, part, seconds, seed)}"
        return figures, ""
    data = Path(tempfile.mkdtemp(prefix=f"{part}-", dir=base))
    with store_environ(kind, data) as environ:
        outcome = run_driver(
            kind,
            environ,
            data / "data",
            seed,
            seconds,
            where=where,
            server={"real": "subprocess", "replicas": "replicas"}.get(part, "inprocess"),
            every_restart=True,
            random_kills=max(1, int(seconds // 20)),
            pg_terminations=max(2, int(seconds // 10)) if part != "inprocess" else 0,
            clock_jumps=0 if part != "inprocess" else max(2, int(seconds // 10)),
            hostile=26,
        )
    report = outcome.failures.message() if outcome.failures else ""
    return outcome.figures, report


def soak(kinds: list[str], minutes: float, seed: int, parts: list[str], seconds: float) -> int:
    master = random.Random(seed)
    failed = 0
    for kind in kinds:
        if kind == "postgres" and (reason := postgres_available()):
            print(f"postgres: skipped ({reason})", flush=True)
            continue
        totals = Figures()
        started = time.monotonic()
        cycle = 0
        with tempfile.TemporaryDirectory(prefix="thirteen-soak-") as tmp:
            while cycle == 0 or time.monotonic() - started < minutes * 60:
                cycle += 1
                for part in parts:  # a cycle always plays every part
                    if part == "replicas" and kind != "postgres":
                        continue  # a SQLite store is served by one process
                    part_seed = master.randrange(1, 2**31)
                    length = seconds or SECONDS[part]
                    if minutes:  # a short soak plays shorter parts
                        length = max(10.0, min(length, SHARE[part] * minutes * 60))
                    began = time.monotonic()
                    figures, report = run_part(kind, part, length, part_seed, Path(tmp))
                    totals.merge(figures)
                    verdict = "ok" if not report else "FAILED"
                    print(
                        f"{kind} cycle {cycle} {part:<9} seed {part_seed:<10} {verdict} "
                        f"in {time.monotonic() - began:.0f} s",
                        flush=True,
                    )
                    if report:
                        failed += 1
                        print(report, flush=True)
        print(f"{kind}: {cycle} cycle(s) in {(time.monotonic() - started) / 60:.1f} min")
        print("\n".join(totals.lines()), flush=True)
    print(f"soak seed {seed}: {'no failure' if not failed else f'{failed} part(s) FAILED'}")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.simulation", description=__doc__)
    parser.add_argument("--minutes", type=float, default=0.0, help="per store (0: one cycle)")
    parser.add_argument("--store", choices=["sqlite", "postgres", "both"], default="both")
    parser.add_argument("--part", choices=[*PARTS, "all"], default="all")
    parser.add_argument("--seconds", type=float, default=0.0, help="length of a driver part")
    parser.add_argument("--seed", type=int, default=None, help="default: THIRTEEN_SIM_SEED")
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else choose_seed()
    kinds = ["sqlite", "postgres"] if args.store == "both" else [args.store]
    parts = list(PARTS) if args.part == "all" else [args.part]
    print(f"soak seed {seed} (THIRTEEN_SIM_SEED={seed} replays the plan)", flush=True)
    if args.part != "all":  # replaying one part: its own seed, no cycle seeds drawn
        figures, report = run_part(
            kinds[0], args.part, args.seconds or SECONDS[args.part], seed, Path(tempfile.mkdtemp())
        )
        print("\n".join(figures.lines()))
        print(report or "no failure")
        return 1 if report else 0
    return soak(kinds, args.minutes, seed, parts, args.seconds)


if __name__ == "__main__":
    sys.exit(main())
