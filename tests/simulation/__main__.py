"""``make soak MINUTES=N``: the simulation for N minutes per store, in cycles.

Each cycle draws its own seed from the run's seed and plays, in turn, the concurrent driver
against a real ``thirteen serve`` (every phase restarted each way, random kills, cut
PostgreSQL sessions), on PostgreSQL the driver against three routing replicas (calls sent to
them in turn, one replica at a time restarted or killed: ``tests.simulation.replicas``), the
driver against the server in process (crashes, clock jumps) and a batch of state-machine
examples; every part ends with every check. Figures are printed per
part and in total; every failure is printed with the command that replays its part.

Before the cycles, the memory part (``tests.simulation.memory``) plays rounds against a fresh
``thirteen serve`` for ``MEMORY_SHARE`` of the minutes: a warm-up that fills every cache to its
bound, then rounds until its time is up, its resident size printed against rounds played; it
fails ("memory does not level off") when the size grew by more than 5% over the last half of
the rounds after the warm-up. It needs ``MEMORY_MINUTES`` or more (its warm-up alone takes
about a minute); a shorter soak skips it, saying so.

    .venv/bin/python -m tests.simulation --minutes 10 --store both
    .venv/bin/python -m tests.simulation --store sqlite --part real --seconds 60 --seed 123
    .venv/bin/python -m tests.simulation --store postgres --part replicas --seconds 60
    .venv/bin/python -m tests.simulation --store sqlite --part memory --seconds 120
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from pathlib import Path

from tests.simulation.machine import run_machine
from tests.simulation.memory import measure, warmup_rounds
from tests.simulation.report import Figures, choose_seed
from tests.simulation.run import run_driver
from tests.support.stores import postgres_available, store_environ

PARTS = ("memory", "real", "replicas", "inprocess", "machine")
SECONDS = {"memory": 120.0, "real": 60.0, "replicas": 60.0, "inprocess": 30.0, "machine": 0.0}
# of a short soak's minutes (the replicas part only on PostgreSQL: SQLite has one process)
SHARE = {"real": 0.35, "replicas": 0.25, "inprocess": 0.2, "machine": 0.0}
MEMORY_SHARE = 0.5  # of each store's minutes, before the cycles (which fill the rest)
MEMORY_MINUTES = 3.0  # the least soak (per store) that runs the memory part
MEMORY_EVERY = 500  # rounds between two readings of the resident size
MEMORY_LEAST = 60.0  # seconds of rounds after the warm-up, however long the warm-up took
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


def run_memory(kind: str, seconds: float, base: Path, ends_at: float | None = None) -> str:
    """The memory part: its warm-up, then rounds until ``ends_at`` (a ``time.monotonic()``)
    but for ``seconds`` at least; its failure report ('' when none). Prints the curve."""
    data = Path(tempfile.mkdtemp(prefix="memory-", dir=base))
    warmup = warmup_rounds()
    then = f"until {MEMORY_SHARE:.0%} of the minutes" if ends_at else f"{seconds:.0f} s"
    print(f"{kind} memory: warm-up {warmup} rounds (what fills the caches), then {then}")
    try:
        with store_environ(kind, data) as environ:
            curve = measure(
                data, environ, warmup=warmup, every=MEMORY_EVERY, seconds=seconds, ends_at=ends_at
            )
    except Exception as error:  # a round that failed: the server's last lines are in it
        return f"memory: {error}\n{replay(kind, 'memory', seconds, 0)}"
    print("\n".join(curve.lines(f"{kind} memory")), flush=True)
    if curve.levelled():
        return ""
    growth = curve.growth()
    why = "too few rounds after the warm-up" if growth is None else f"grew {growth:+.1%}"
    return (
        f"memory does not level off: {why} over the last half of the run (at most 5%)\n"
        f"{replay(kind, 'memory', seconds, 0)}"
    )


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
            if "memory" in parts and minutes >= MEMORY_MINUTES:
                began = time.monotonic()
                # Its share of the minutes, however long the warm-up took (a busy machine plays
                # fewer rounds a second), but at least MEMORY_LEAST after the warm-up
                ends_at = began + MEMORY_SHARE * minutes * 60
                report = run_memory(kind, MEMORY_LEAST, Path(tmp), ends_at)
                verdict = "ok" if not report else "FAILED"
                print(f"{kind} memory {verdict} in {time.monotonic() - began:.0f} s", flush=True)
                if report:
                    failed += 1
                    print(report, flush=True)
            elif "memory" in parts:
                print(f"{kind} memory: skipped (it needs --minutes {MEMORY_MINUTES:g} or more)")
            budget = minutes * 60 - (time.monotonic() - started)  # for the cycles' parts
            while cycle == 0 or time.monotonic() - started < minutes * 60:
                cycle += 1
                for part in parts:  # a cycle always plays every part
                    if part == "memory":
                        continue  # played once, above
                    if part == "replicas" and kind != "postgres":
                        continue  # a SQLite store is served by one process
                    part_seed = master.randrange(1, 2**31)
                    length = seconds or SECONDS[part]
                    if minutes:  # a short soak plays shorter parts, in what memory left
                        length = max(10.0, min(length, SHARE[part] * budget))
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
    if args.part == "memory":  # no seed: the same rounds every time
        report = run_memory(kinds[0], args.seconds or SECONDS["memory"], Path(tempfile.mkdtemp()))
        print(report or "no failure")
        return 1 if report else 0
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
