"""One run of the concurrent driver on one store, with its checks and figures."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.simulation.checks import Checker, Store
from tests.simulation.client import Client
from tests.simulation.driver import Plan, Run, drive
from tests.simulation.model import Model
from tests.simulation.replicas import ReplicaSet
from tests.simulation.report import Failures, Figures
from tests.simulation.servers import InProcessServer, ServeProcess
from tests.support.clock import ManualClock


@dataclass
class Outcome:
    kind: str
    seed: int
    figures: Figures
    failures: Failures
    seconds: float
    stages: dict[str, float]

    def summary(self, title: str) -> str:
        verdict = "ok" if not self.failures else f"{len(self.failures.items)} failure(s)"
        stages = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.stages.items())
        lines = [
            f"{title} on {self.kind}, seed {self.seed}: {verdict} in {self.seconds:.1f} s "
            f"({stages})"
        ]
        return "\n".join(lines + self.figures.lines())


def terminator(environ: dict[str, str], app_name: str) -> Callable[[], int]:
    """Cuts the PostgreSQL sessions of the server under test only: those whose
    application_name is this run's (the server got it through PGAPPNAME), in this database,
    never the caller's own."""
    from tests.support.stores import _connect

    def terminate() -> int:
        with _connect() as conn:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = %s AND datname = %s AND pid <> pg_backend_pid()",
                (app_name, environ["POSTGRES_DBNAME"]),
            ).fetchall()
        return sum(1 for (done,) in rows if done)

    return terminate


def run_driver(
    kind: str,
    environ: dict[str, str],
    data: Path,
    seed: int,
    seconds: float,
    *,
    where: str,
    server: str = "subprocess",
    **plan_options: Any,
) -> Outcome:
    """Play ``seconds`` of the seeded plan against a server on ``environ``'s store, then check
    every invariant. Nothing random here escapes the seed (see ``driver``)."""
    started = time.monotonic()
    figures = Figures()
    failures = Failures(seed, where)
    model = Model()
    if server in ("subprocess", "replicas"):
        plan_options.setdefault("clock_jumps", 0)
        plan_options.setdefault("every_restart", False)
    else:
        plan_options.setdefault("random_kills", 1)
        plan_options.setdefault("pg_terminations", 0)
        plan_options.setdefault("clock_jumps", 2)
    plan = Plan.draw(seed, seconds, **plan_options)
    terminate = None
    if server in ("subprocess", "replicas"):
        app_name = ""
        if kind == "postgres":
            app_name = f"thirteen-sim-{environ['POSTGRES_SCHEMA']}"
            terminate = terminator(environ, app_name)
        running: Any = (
            ReplicaSet(data, environ, app_name=app_name)
            if server == "replicas"
            else ServeProcess(data, environ, app_name=app_name)
        )
    else:
        running = InProcessServer(data, environ, ManualClock(), seed)
    stages: dict[str, float] = {"start": time.monotonic() - started}
    try:
        run = Run(plan, running, model, figures, failures, terminate=terminate)
        mark = time.monotonic()
        drive(run)
        stages["play and settle"] = time.monotonic() - mark
        client = Client(
            running,
            random.Random(plan.thread_seeds["final"]),
            figures,
            failures,
            stop_at=run.stop_at,
        )
        checker = Checker(model, client, figures, failures, Store(kind, data, environ))
        if running.broken:  # nothing to check against; the failure says why
            return Outcome(kind, seed, figures, failures, time.monotonic() - started, stages)
        mark = time.monotonic()
        checker.online()
        stages["online checks"] = time.monotonic() - mark
        mark = time.monotonic()
        running.stop()
        stages["stop"] = time.monotonic() - mark
        mark = time.monotonic()
        checker.offline(running)
        stages["offline checks"] = time.monotonic() - mark
    finally:
        running.abort()
    return Outcome(kind, seed, figures, failures, time.monotonic() - started, stages)
