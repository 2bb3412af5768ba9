"""Restart time against the size of the log: a server starting on a store of 10k, 100k and 1M
events, beside the first version's start-up read (the log follower from position 0) on the
same store.

The stores are generated in process: a few real rounds (one left open, so the sweeper has
work to resume) and then filler, wallets sitting down and standing up, written straight into
the SQLite file with valid chain links. The views are brought to the head by the projector, as
they are after a graceful stop.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
import time
from pathlib import Path

from domain.ids import wallet_uuid
from domain.rules.ruleset import STANDARD
from domain.tlog.chain import canonical, link
from domain.wallet import Wallet
from projections.projector import Projector
from service.bootstrap import start
from service.eventstore.follower import LogFollower
from service.eventstore.sqlite import SQLiteEvents
from service.opening import open_app
from service.rpc.watch import TABLE_AND_ROUND_TOPICS

SIZES = (10_000, 100_000, 1_000_000)
TIMESTAMP = {"_type_": "datetime_iso", "_data_": "2026-12-01T00:00:00+00:00"}
OPENED = "domain.wallet:Wallet.Opened"
SAT, STOOD = "domain.wallet:Wallet.SatDown", "domain.wallet:Wallet.StoodUp"


def _filler(count: int, per_wallet: int = 1000) -> list[tuple[str, int, str, bytes]]:
    rows: list[tuple[str, int, str, bytes]] = []
    wallet = 0
    while len(rows) < count:
        player = f"filler-{wallet}"
        stream = wallet_uuid(player)
        previous = ""
        for version in range(1, min(per_wallet, count - len(rows)) + 1):
            if version == 1:
                topic = OPENED
                state = {
                    "timestamp": TIMESTAMP,
                    "originator_topic": "domain.wallet:Wallet",
                    "player_id": player,
                }
            else:
                topic = SAT if version % 2 == 0 else STOOD
                state = {"timestamp": TIMESTAMP, "table_id": "filler-table"}
            previous = link(previous, canonical(str(stream), version, topic, state))
            state["chain"] = previous
            rows.append((stream.hex, version, topic, json.dumps(state).encode()))
        wallet += 1
    return rows


def _store(data: Path, events: int) -> int:
    """A store of about ``events`` events with its views at the head; returns the count."""
    app = open_app(data, environ={"THIRTEEN_STORE": "sqlite"})
    app.open_table("t", STANDARD)
    for p in ("a", "b"):
        app.credit(p, 1000, f"c-{p}")
        app.sit_down("t", p)
    app.deal("t")  # left open: the restarted sweeper must know it
    real = app.max_position()
    assert isinstance(app.recorder, SQLiteEvents)  # opened on SQLite above
    datastore = app.recorder.datastore
    with datastore.transaction(commit=True) as cursor:
        cursor.executemany(
            "INSERT INTO stored_events (originator_id, originator_version, topic, state) "
            "VALUES (?, ?, ?, ?)",
            _filler(events - real),
        )
    probe: Wallet = app.repository.get(wallet_uuid("filler-0"))  # the filler decodes as wallets
    assert probe.player_id == "filler-0"
    views, _ = app.database.views()
    views.create()
    Projector(app, views, batch=20_000).run_once()
    views.close()
    count = app.max_position()
    app.close()
    return count


async def _restart(data: Path) -> tuple[float, float]:
    """Seconds until the server serves, and until its follower has caught up."""
    began = time.perf_counter()
    app = open_app(data, environ={"THIRTEEN_STORE": "sqlite"})
    running = await start(app, "127.0.0.1:0")
    serving = time.perf_counter() - began
    head = app.max_position()
    while running.follower.position < head:
        await asyncio.sleep(0.001)
    caught_up = time.perf_counter() - began
    assert len(running.sweeper.open) == 1, "the open round was not resumed"
    await running.stop(grace=0)
    return serving, caught_up


def _read_from_start(data: Path) -> float:
    """The first version's start-up: the follower reads the log from position 0."""
    app = open_app(data, environ={"THIRTEEN_STORE": "sqlite"})
    follower = LogFollower(app, topics=TABLE_AND_ROUND_TOPICS)
    began = time.perf_counter()
    follower.read_once()
    seconds = time.perf_counter() - began
    app.close()
    return seconds


def report() -> list[str]:
    lines = [
        "restart (SQLite): events | serving after | follower caught up | baseline: "
        "follower from position 0"
    ]
    for size in SIZES:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp)
            count = _store(data, size)
            serving, caught_up = asyncio.run(_restart(data))
            baseline = _read_from_start(data)
        lines.append(
            f"  {count:>9,} events | {serving * 1000:8.1f} ms | {caught_up * 1000:8.1f} ms | "
            f"{baseline * 1000:9.1f} ms"
        )
    return lines


if __name__ == "__main__":
    for line in report():
        print(line)
