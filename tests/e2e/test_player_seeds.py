"""Player seeds (R12.8) through a real server, on SQLite and PostgreSQL: Deal takes a seed from
each player's device, the round records and shows them, a player recomputes their own hand
from the revealed server seed, bad seeds are refused with nothing stored, a repeated Deal is
idempotent on its seeds, exports carry them, and the audit catches seeds altered in the store.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
import pytest

from domain.fairness.shuffle import deal as shuffle
from domain.ids import round_uuid
from domain.rules.cards import format_cards
from domain.rules.ruleset import STANDARD
from domain.rules.suggest import suggest
from domain.tlog.chain import CHAIN, canonical, link
from service._generated.thirteen.v1 import audit_pb2, table_pb2
from service.opening import open_app
from tests.e2e.helpers import Served
from tests.support.server import ServerThread

from .helpers import (
    arrange_well,
    assert_refused,
    credit,
    events,
    get_round,
    hands_of,
    head,
    nothing_stored,
    of_type,
    reveal,
    seated_table,
)

SCRIPT = Path(sys.executable).parent / "thirteen"
INVALID = grpc.StatusCode.INVALID_ARGUMENT
EXISTS = grpc.StatusCode.ALREADY_EXISTS
PLAYERS = ["A", "B", "C"]
SEEDS = {"C": "种子 from C's phone", "A": "a-7f3e"}  # B gives none; map order is no matter


def deal_with(
    server: Served,
    table_id: str,
    seeds: dict[str, str],
    client_seed: str = "dealer",
    request_id: str = "",
) -> table_pb2.DealResponse:
    request = table_pb2.DealRequest(
        table_id=table_id, client_seed=client_seed, request_id=request_id
    )
    request.player_seeds.update(seeds)
    return server.tables.Deal(request)


def seeds_shown(round_: Any) -> dict[str, str]:
    """The player seeds a Round, Deal or GetRound message shows, by player."""
    return {p.player_id: p.player_seed for p in round_.players}


def my_hand_from_the_revealed_seed(shown: Any, me: str) -> list[str]:
    """What a player does alone after the reveal (R12.6, R12.8), from GetRound: hash the seeds
    given, in seat order, into the client seed, and deal from the revealed server seed."""
    seats = sorted(shown.players, key=lambda p: p.seat)
    given = [[p.player_id, p.player_seed] for p in seats if p.player_seed]
    document = json.dumps(given, separators=(",", ":"), ensure_ascii=True)
    mixed = f"{shown.client_seed}|{hashlib.sha256(document.encode()).hexdigest()}"
    server_seed = bytes.fromhex(shown.server_seed)
    assert hashlib.sha256(server_seed).hexdigest() == shown.commitment
    hands = shuffle(server_seed, mixed, shown.round_id, len(seats))
    return format_cards(hands[[p.player_id for p in seats].index(me)])


def test_r12_8_a_deal_records_the_player_seeds_and_every_reader_shows_them(
    server: ServerThread,
) -> None:
    """R12.8: the seeds given with Deal are recorded by player; DealResponse, GetRound (any
    viewer, before and after the reveal) and WatchTable show each on its player; the recorded
    client seed stays the caller's own."""
    seated_table(server, "t", dict.fromkeys(PLAYERS, 1000))
    mark = head(server)
    dealt = deal_with(server, "t", SEEDS)
    expected = {"A": "a-7f3e", "B": "", "C": "种子 from C's phone"}
    assert dealt.client_seed == "dealer"
    assert seeds_shown(dealt) == expected
    for viewer in ["", *PLAYERS]:
        assert seeds_shown(get_round(server, dealt.round_id, viewer)) == expected
    message = events(server, "t", of_type("RoundDealt"), after=mark)[-1]
    assert seeds_shown(message.round) == expected
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)
    assert seeds_shown(get_round(server, dealt.round_id)) == expected


def test_r12_8_each_player_recomputes_their_own_hand_from_the_revealed_seed(
    server: ServerThread,
) -> None:
    """R12.8, R12.6: after the reveal every player, reading only GetRound, finds their seed
    recorded and their own hand dealt by the published algorithm with the seeds mixed in;
    the same seeds without the players' ones give other hands."""
    seated_table(server, "t", dict.fromkeys(PLAYERS, 1000))
    dealt = deal_with(server, "t", SEEDS)
    mine = hands_of(dealt)
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)
    for player in PLAYERS:
        shown = get_round(server, dealt.round_id, player)
        assert seeds_shown(shown)[player] == SEEDS.get(player, "")
        assert my_hand_from_the_revealed_seed(shown, player) == mine[player]
    seed = bytes.fromhex(get_round(server, dealt.round_id).server_seed)
    unseeded = shuffle(seed, "dealer", dealt.round_id, len(PLAYERS))
    assert [format_cards(h) for h in unseeded] != [mine[p] for p in PLAYERS]


@pytest.mark.parametrize(
    ("seeds", "says"),
    [
        ({"A": "a", "X": "x"}, "'X' is not dealt into the round"),  # credited, not seated
        ({"elsewhere": "e"}, "'elsewhere' is not dealt into the round"),  # seated elsewhere
        ({"A": "s" * 65}, "at most 64 characters"),
        ({"B": "tab\there"}, "printable"),
        ({"C": "\x00"}, "printable"),
        ({"x" * 10_000: "a"}, "is not dealt into the round"),
    ],
)
def test_r12_8_bad_player_seeds_are_refused_and_nothing_is_stored(
    server: ServerThread, seeds: dict[str, str], says: str
) -> None:
    """R12.8: a seed from anyone not seated and dealt in, or one that is not printable or is
    longer than 64 characters, is INVALID_ARGUMENT on player_seeds; no round, no event."""
    seated_table(server, "t", dict.fromkeys(PLAYERS, 1000))
    credit(server, "X", 1000, "start-X")
    seated_table(server, "other", {"elsewhere": 1000, "else2": 1000})
    with nothing_stored(server, tables=["t"], players=[*PLAYERS, "X"]):
        refused = assert_refused(
            lambda r: deal_with(server, "t", seeds, request_id="r1"),
            None,
            INVALID,
            "INVALID_ARGUMENT",
            field="player_seeds",
            says=says,
        )
        assert len(refused.message) <= 300
    assert get_round_count(server, "t") == 0


def get_round_count(server: Served, table_id: str) -> int:
    return server.tables.GetTable(table_pb2.GetTableRequest(table_id=table_id)).round_count


def test_r12_8_a_repeated_deal_is_idempotent_on_its_player_seeds(server: ServerThread) -> None:
    """R12.8 with Deal's idempotency: the same request id with the same seeds (in any order,
    an empty seed being none) answers the stored round; other seeds, or none, are
    ALREADY_EXISTS and store nothing, during the round and after it."""
    seated_table(server, "t", dict.fromkeys(PLAYERS, 1000))
    dealt = deal_with(server, "t", SEEDS, request_id="d1")
    again = deal_with(server, "t", {"B": "", "C": SEEDS["C"], "A": "a-7f3e"}, request_id="d1")
    assert again == dealt
    for other in ({**SEEDS, "B": "b"}, {"A": "a-7f3e"}, {}):

        def deal_again(_: None, seeds: dict[str, str] = other) -> table_pb2.DealResponse:
            return deal_with(server, "t", seeds, request_id="d1")

        with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=PLAYERS):
            assert_refused(
                deal_again,
                None,
                EXISTS,
                "ALREADY_EXISTS",
                says="other player seeds",
            )
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)
    assert deal_with(server, "t", SEEDS, request_id="d1").round_id == dealt.round_id
    with nothing_stored(server, tables=["t"], rounds=[dealt.round_id], players=PLAYERS):
        assert_refused(
            lambda r: deal_with(server, "t", {"B": "late"}, request_id="d1"),
            None,
            EXISTS,
            "ALREADY_EXISTS",
        )


def test_r12_8_exports_carry_the_seeds_and_the_audit_recomputes_the_deal_with_them(
    server: ServerThread, tmp_path: Path
) -> None:
    """R12.8: ExportRound holds the deal's player seeds (class version 2 of Dealt); AuditRound
    and the offline audit of the export recompute the deal with them and pass."""
    seated_table(server, "t", dict.fromkeys(PLAYERS, 1000))
    dealt = deal_with(server, "t", SEEDS)
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)
    report = server.audit.AuditRound(audit_pb2.AuditRoundRequest(round_id=dealt.round_id))
    assert report.ok, [f.message for f in report.findings if not f.ok]
    r12_8 = [f.message for f in report.findings if f.rule == "R12.8"]
    assert any("player seeds mixed in" in m for m in r12_8), r12_8
    document = server.audit.ExportRound(
        audit_pb2.ExportRoundRequest(round_id=dealt.round_id)
    ).document
    dealt_state = json.loads(document)["round_events"][0]["state"]
    assert dealt_state["player_seeds"] == {"A": "a-7f3e", "C": "种子 from C's phone"}
    assert dealt_state["class_version"] == 2
    assert dealt_state["client_seed"] == "dealer"
    export = tmp_path / "export.json"
    export.write_text(document, encoding="utf-8")
    done = audit_cli(["--file", str(export)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "R12.8" in done.stdout


# Altered seeds in the store (SQLite, as an attacker with the database file) ------------------


def audit_cli(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "audit", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "THIRTEEN_STORE": "sqlite"},
    )


def failed(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert "Traceback" not in done.stderr, done.stderr
    report = json.loads(done.stdout)
    return [f for r in report["rounds"] for f in r["findings"] if not f["ok"]]


@pytest.fixture
def seeded_store(tmp_path: Path) -> tuple[Path, str]:
    """A SQLite store with one revealed round dealt with player seeds."""
    data = tmp_path / "data"
    app = open_app(data, environ={"THIRTEEN_STORE": "sqlite"})
    try:
        app.open_table("t", STANDARD)
        for player in PLAYERS:
            app.credit(player, 1000, f"in-{player}")
            app.sit_down("t", player)
        round_ = app.deal("t", "dealer", player_seeds=SEEDS)
        for player in round_.players:
            best = suggest(list(round_.hand(player)), STANDARD).arrangement
            app.arrange(round_.round_id, player, best.front, best.middle, best.back)
        app.reveal(round_.round_id)
    finally:
        app.close()
    return data, round_.round_id


def alter_seed(data: Path, round_id: str, *, relink: bool) -> None:
    """Change C's recorded seed in the deal; with ``relink`` recompute every link of the
    round's stream after it, as a forger who knows the public link algorithm would."""
    stream = round_uuid(round_id)
    db = sqlite3.connect(data / "thirteen.sqlite")
    try:
        db.execute("DROP TRIGGER stored_events_no_update")
        rows = db.execute(
            "SELECT originator_version, topic, state FROM stored_events "
            "WHERE originator_id = ? ORDER BY originator_version",
            (stream.hex,),
        ).fetchall()
        previous = ""
        for version, topic, raw in rows:
            state = json.loads(raw)
            if version == 1:
                state["player_seeds"]["C"] = "another seed"
            if relink:
                state[CHAIN] = link(previous, canonical(str(stream), version, topic, state))
                previous = state[CHAIN]
            if version == 1 or relink:
                db.execute(
                    "UPDATE stored_events SET state = ? "
                    "WHERE originator_id = ? AND originator_version = ?",
                    (json.dumps(state).encode(), stream.hex, version),
                )
        db.commit()
    finally:
        db.close()


def test_r12_8_the_untouched_seeded_store_audits_clean(seeded_store: tuple[Path, str]) -> None:
    data, round_id = seeded_store
    done = audit_cli(["--data", str(data), "--round", round_id])
    assert done.returncode == 0, done.stdout + done.stderr
    assert failed(done) == []


@pytest.mark.parametrize("relink", [False, True], ids=["edited", "edited and relinked"])
def test_r12_8_an_altered_player_seed_fails_the_audit(
    seeded_store: tuple[Path, str], relink: bool
) -> None:
    """R12.8: a player seed changed in the stored deal no longer gives the recorded hands; the
    audit says so under R12.8 even when the forger recomputed the hash chain."""
    data, round_id = seeded_store
    alter_seed(data, round_id, relink=relink)
    done = audit_cli(["--data", str(data), "--round", round_id])
    assert done.returncode == 1, done.stdout + done.stderr
    problems = failed(done)
    assert any(
        f["rule"] == "R12.8" and "differ from the deal recomputed" in f["message"] for f in problems
    ), problems
    assert any(f["rule"] == "CHAIN" for f in problems) is not relink
