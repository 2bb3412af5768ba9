"""Audit benchmark: ``thirteen audit --all`` on SQLite in rounds per second, beside the time just
to read the log (SQL and the JSON of every event) and to decode it into domain events.

The audit is timed on the code path the CLI runs: ``StoreReader.every_round`` over the whole
log, then ``service.evidence.audit`` per round, with the results view read from the views beside
the store (rebuilt first, as on a store a server has been writing). Wall-clock rates are the
best of a few runs; CPU-time rates are given too, since they move less on a busy machine.

``python -m tests.bench.audit --profile`` prints where the audit's time goes (cProfile).
"""

from __future__ import annotations

import cProfile
import io
import os
import pstats
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from domain.findings import passed
from projections.projector import rebuild
from projections.store import ViewStore
from service.application import Thirteen
from service.evidence import Decoder, StoreReader, audit, record_of
from service.opening import open_app
from service.rpc.audit import result_reader
from service.tools import audit as service_audit
from tests.bench.projections import play

TARGET = 3_000  # rounds per second
BATCH = 5000  # as StoreReader.every_round reads the log


def read_log(app: Thirteen, decoder: Decoder | None = None) -> int:
    """Every stored event, in batches as the audit reads them, parsed from JSON; with a
    decoder also turned into a domain event. Returns the number of events."""
    count = 0
    position = 0
    while True:
        batch = app.recorder.select_notifications(start=position + 1, limit=BATCH)
        if not batch:
            return count
        for notification in batch:
            record = record_of(notification.id, notification)
            if decoder is not None:
                decoder.event(record)
        count += len(batch)
        position = batch[-1].id


def _reader(app: Thirteen, views: ViewStore) -> StoreReader:
    views_reader = result_reader(views)

    def result_of(round_id: str) -> Any:
        try:
            return views_reader(round_id)
        except Exception:  # as the CLI: no views, audit the events alone
            return None

    return StoreReader(app, result_of)


def audit_all(app: Thirteen, views: ViewStore) -> tuple[int, int]:
    """``thirteen audit --all`` in one process: the log read once by ``every_round``, then
    ``service.evidence.audit`` per round. Returns (rounds audited, rounds failed)."""
    decoder = Decoder()
    rounds = failed = 0
    for found, extra in _reader(app, views).every_round():
        if found is None:
            failed += bool(extra)
            continue
        rounds += 1
        failed += not passed(audit(found, decoder))
    return rounds, failed


def _audit_many() -> Callable[..., list[tuple[str, list[Any]]]] | None:
    """``service.tools.audit.audit_many`` (rounds judged on worker processes), where it exists."""
    found: Callable[..., list[tuple[str, list[Any]]]] | None = getattr(
        service_audit, "audit_many", None
    )
    return found


def audit_all_workers(app: Thirteen, views: ViewStore, workers: int) -> tuple[int, int]:
    """As the CLI runs ``--all`` with ``audit_many``: the evidence gathered in this process,
    the rounds judged on ``workers`` processes."""
    many = _audit_many()
    assert many is not None
    evidences, failed = [], 0
    for found, extra in _reader(app, views).every_round():
        if found is None:
            failed += bool(extra)
        else:
            evidences.append(found)
    reports = many(evidences, workers)
    return len(reports), failed + sum(not passed(findings) for _, findings in reports)


def _best(run: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """(wall seconds, CPU seconds, result) of the fastest of ``repeat`` runs."""
    best: tuple[float, float, Any] | None = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = run()
        timing = (time.perf_counter() - wall, time.process_time() - cpu, result)
        if best is None or timing[0] < best[0]:
            best = timing
    assert best is not None
    return best


def _played(tmp: str, rounds: int) -> tuple[Thirteen, ViewStore]:
    app = open_app(Path(tmp), environ={"THIRTEEN_STORE": "sqlite"})
    play(app, rounds)
    views, _ = app.database.views()
    rebuild(app, views)
    return app, views


def audit_speed(rounds: int = 1500, repeat: int = 3) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        app, views = _played(tmp, rounds)
        try:
            read_s, read_cpu, events = _best(lambda: read_log(app), repeat)
            decoder = Decoder()
            decode_s, decode_cpu, _ = _best(lambda: read_log(app, decoder), repeat)
            audit_s, audit_cpu, (audited, failed) = _best(lambda: audit_all(app, views), repeat)
            workers = os.cpu_count() or 1  # the CLI's default
            parallel: dict[str, float] = {}
            if _audit_many() is not None and workers > 1:
                wall, _, (done, bad) = _best(lambda: audit_all_workers(app, views, workers), repeat)
                assert done == rounds and bad == 0, f"{bad} of {done} rounds failed the audit"
                parallel = {"workers": workers, "workers_s": wall, "workers_rate": rounds / wall}
        finally:
            views.close()
            app.close()
    assert audited == rounds and failed == 0, f"{failed} of {audited} rounds failed the audit"
    return {
        **parallel,
        "rounds": rounds,
        "events": events,
        "audit_s": audit_s,
        "audit_rate": rounds / audit_s,
        "audit_cpu_rate": rounds / audit_cpu,
        "read_s": read_s,
        "read_rate": rounds / read_s,
        "read_cpu_rate": rounds / read_cpu,
        "decode_s": decode_s,
        "decode_rate": rounds / decode_s,
        "decode_cpu_rate": rounds / decode_cpu,
    }


def profile(rounds: int = 300, top: int = 30) -> str:
    """The audit of ``rounds`` rounds under cProfile: the functions by own time and by
    cumulative time."""
    with tempfile.TemporaryDirectory() as tmp:
        app, views = _played(tmp, rounds)
        profiler = cProfile.Profile()
        try:
            profiler.runcall(audit_all, app, views)
        finally:
            views.close()
            app.close()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def report() -> list[str]:
    s = audit_speed()
    per_round = s["events"] / s["rounds"]
    lines = [
        "audit (SQLite)",
        f"  audit --all            {s['audit_rate']:>10,.0f} rounds/s   ({s['rounds']:,.0f} rounds,"
        f" {s['events']:,.0f} events in {s['audit_s']:.2f} s; CPU time "
        f"{s['audit_cpu_rate']:,.0f} rounds/s)   (target >= {TARGET:,}/s)",
        f"  baseline: read the log {s['read_rate']:>10,.0f} rounds/s   ({s['read_s']:.2f} s: SQL "
        f"and JSON of {per_round:.0f} events a round; CPU {s['read_cpu_rate']:,.0f} rounds/s)",
        f"  baseline: read+decode  {s['decode_rate']:>10,.0f} rounds/s   ({s['decode_s']:.2f} s: "
        f"every event as a domain event; CPU {s['decode_cpu_rate']:,.0f} rounds/s)",
    ]
    if "workers" in s:
        lines.insert(
            2,
            f"  audit --all, {s['workers']:.0f} workers {s['workers_rate']:>8,.0f} rounds/s   "
            f"({s['workers_s']:.2f} s; service.tools.audit.audit_many, as the CLI runs it)",
        )
    return lines


if __name__ == "__main__":
    if "--profile" in sys.argv[1:]:
        print(profile())
    else:
        print("\n".join(report()))
