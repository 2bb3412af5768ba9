"""Attack (issue 11, the seed key; an unlucky operator): a server restarted with a seed key file
that lacks the key a round in progress was committed under (a rotation that dropped the old
line too early, the wrong file, a replica given another file). Past the round's deadline the
deadline sweeper tries to reveal it, is refused (SEED_KEY_MISSING, rightly: nothing is stored)
and tries again at every sweep, forever: each attempt is a command through the writer and an
info line ``deadline_reveal_skipped`` in the log, four a second per stuck round with the
default interval (here, with the tests' 0.05 s interval, about twenty a second), for as long
as the key is missing.

A refusal that cannot change until the key file does should be logged once (or with a growing
pause), not once per sweep."""

from __future__ import annotations

import time
from pathlib import Path

from structlog.testing import capture_logs

from domain.fairness.seeds import key_id
from service._generated.thirteen.v1 import table_pb2
from tests.e2e.helpers import credit, deal
from tests.support.clock import ManualClock
from tests.support.server import ServerThread
from tests.support.stores import store_environ

K1, K2 = bytes(range(32)), bytes(range(1, 33))
WATCH_SECONDS = 2.0  # about 40 sweeps at the tests' 0.05 s interval


def _key_file(path: Path, key: bytes) -> None:
    path.write_text(key.hex() + "\n", encoding="ascii")
    path.chmod(0o600)


def test_a_round_whose_key_is_missing_is_not_retried_and_logged_at_every_sweep(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    _key_file(data / "seed.key", K1)
    clock = ManualClock()
    with store_environ("sqlite", tmp_path) as environ:
        server = ServerThread(data, environ, clock)
        try:
            for player in ("A", "B"):
                credit(server, player, 5000)
            server.tables.OpenTable(table_pb2.OpenTableRequest(table_id="t"))
            for player in ("A", "B"):
                server.tables.SitDown(table_pb2.SitDownRequest(table_id="t", player_id=player))
            dealt = deal(server, "t")
        finally:
            server.stop()
        _key_file(data / "seed.key", K2)  # the file no longer holds K1
        with capture_logs() as logs:
            server = ServerThread(data, environ, clock)
            try:
                clock.advance(24 * 3600)  # far past the round's deadline (R10.3)
                time.sleep(WATCH_SECONDS)
            finally:
                server.stop()
    skipped = [
        e
        for e in logs
        if e.get("event") == "deadline_reveal_skipped" and e.get("round_id") == dealt.round_id
    ]
    assert skipped, "the sweeper did not even try: the attack needs its first refusal"
    assert key_id(K1) in str(skipped[0].get("reason"))
    assert len(skipped) <= 3, f"{len(skipped)} identical refusals logged in {WATCH_SECONDS} s"
