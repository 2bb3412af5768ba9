"""Read-model benchmarks: rebuilding the views on SQLite and on PostgreSQL (events/s), and the
lag between ``Reveal`` returning and its result being readable, beside the time of the Reveal
itself."""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

from domain.rules.cards import Card
from domain.rules.ruleset import STANDARD
from domain.rules.suggest import suggest
from projections.projector import Projector, rebuild
from service.application import Thirteen
from service.opening import open_app
from tests.bench import database


def _arrange_all(app: Thirteen, round_id: str, hands: dict[str, list[Card]]) -> None:
    for player, cards in hands.items():
        a = suggest(cards, STANDARD).arrangement
        app.arrange(round_id, player, a.front, a.middle, a.back)


def play(app: Thirteen, rounds: int, tables: int = 8, seed: int = 1) -> list[float]:
    """Full 4-player rounds through the application; returns each Reveal's seconds."""
    rng = random.Random(seed)
    for t in range(tables):
        app.open_table(f"t{t}", STANDARD)
        for p in range(4):
            app.credit(f"t{t}p{p}", 10_000, f"c{t}-{p}")
            app.sit_down(f"t{t}", f"t{t}p{p}")
    reveal_seconds = []
    for n in range(rounds):
        round_ = app.deal(f"t{n % tables}", client_seed=str(rng.random()))
        _arrange_all(app, round_.round_id, {p: list(round_.hand(p)) for p in round_.players})
        started = time.perf_counter()
        app.reveal(round_.round_id)
        reveal_seconds.append(time.perf_counter() - started)
    return reveal_seconds


def rebuild_speed(rounds: int = 1500, environ: Mapping[str, str] | None = None) -> dict[str, float]:
    """Play ``rounds`` on a fresh store (SQLite unless ``environ`` says otherwise), then time
    rebuilding the views from its log."""
    with tempfile.TemporaryDirectory() as tmp:
        app = open_app(Path(tmp), environ=environ or {"THIRTEEN_STORE": "sqlite"})
        play(app, rounds)
        views, _ = app.database.views()
        started = time.perf_counter()
        count = rebuild(app, views)
        seconds = time.perf_counter() - started
        views.close()
        app.close()
    return {"events": count, "seconds": seconds, "rate": count / seconds}


def reveal_lag(rounds: int = 300) -> dict[str, float]:
    """Reveal on the application, then read the result from the views as GetRoundResult does
    (waiting for the projector's position to reach the reveal)."""
    with tempfile.TemporaryDirectory() as tmp:
        app = open_app(Path(tmp), environ={"THIRTEEN_STORE": "sqlite"})
        views, lock = app.database.views()
        # As the server runs it: the projector batches on its own interval, and a reader
        # of a result waits for it (GetRoundResult's read-your-writes), which pokes it.
        projector = Projector(app, views, leadership=lock, interval=0.05)
        projector.start()
        lags, reveals = [], []
        try:
            play(app, 8)  # warm up: tables and players exist
            rng = random.Random(2)
            for n in range(rounds):
                round_ = app.deal(f"t{n % 8}", client_seed=str(rng.random()))
                _arrange_all(
                    app, round_.round_id, {p: list(round_.hand(p)) for p in round_.players}
                )
                started = time.perf_counter()
                result = app.reveal(round_.round_id)
                revealed = time.perf_counter()
                assert projector.wait(result.position, timeout=5)
                assert views.finished_round(round_.round_id) is not None
                lags.append((time.perf_counter() - revealed) * 1000)
                reveals.append((revealed - started) * 1000)
                assert result.position > 0
        finally:
            projector.stop()
            views.close()
            app.close()
    return {
        "p50": statistics.median(lags),
        "p99": _p99(lags),
        "reveal_p50": statistics.median(reveals),
    }


def _p99(samples: list[float]) -> float:
    return sorted(samples)[int(0.99 * (len(samples) - 1))]


def _rebuild_line(store: str, speed: dict[str, float], target: str = "") -> str:
    return (
        f"  rebuild {store:<10}     {speed['rate']:>10,.0f} events/s   ({speed['events']:,.0f} "
        f"events in {speed['seconds']:.2f} s){target}"
    )


def report() -> Iterator[str]:
    speed = rebuild_speed()
    lag = reveal_lag()
    yield "projections"
    yield _rebuild_line("SQLite", speed, "   (target >= 20,000/s)")
    yield (
        f"  reveal -> readable lag p50 {lag['p50']:6.2f} ms   p99 {lag['p99']:6.2f} ms   "
        f"(the Reveal itself, SQLite: p50 {lag['reveal_p50']:.2f} ms)"
    )
    reason = database.unreachable()
    if reason is not None:
        yield f"  rebuild PostgreSQL skipped: {reason}"
        return
    with database.fresh_schema() as environ:
        yield _rebuild_line("PostgreSQL", rebuild_speed(400, environ), "   (no target)")


if __name__ == "__main__":
    for line in report():
        print(line, flush=True)
