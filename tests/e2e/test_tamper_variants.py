"""Tamper evidence for R14's rounds: stores of puxian, puxian5 and puxian6 rounds (copies of a
card, five and six players, the horse) audit clean with the real ``thirteen audit``; a horse card
edited in the stored deal, or a card dealt more often than the deck holds it, fails the audit
naming its rule (R14.1.6, R14.2.3) and the event. Stores are tampered as in ``test_tamper``."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from domain.ids import round_uuid
from domain.rules.ruleset import ALL_PRESETS
from domain.rules.suggest import suggest
from service.application import Thirteen
from service.evidence import StoreReader
from service.opening import open_app
from tests.e2e.test_tamper import (
    ALL,
    ONE,
    Played,
    _audit_document,
    _round_event,
    assert_names,
    attacker,
    audit_store,
    event_name,
    position_of,
    row,
    write_state,
)

SEATS = {"puxian": 4, "puxian5": 5, "puxian6": 6}


@dataclass(frozen=True)
class Stores:
    played: Played  # a puxian6 round, the one every test tampers with
    rounds: dict[str, str]  # a round of each preset


def _play(app: Thirteen, preset: str, client_seed: str) -> tuple[str, str]:
    rules = ALL_PRESETS[preset]
    round_ = app.deal(preset, client_seed=client_seed)
    for player in round_.players:
        a = suggest(list(round_.hand(player)), rules).arrangement
        app.arrange(round_.round_id, player, a.front, a.middle, a.back)
    return round_.round_id, app.reveal(round_.round_id).receipt


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    data = tmp_path_factory.mktemp("tamper-r14") / "pristine"
    app = open_app(data, environ={"THIRTEEN_STORE": "sqlite"})
    try:
        rounds = {}
        for preset, seats in SEATS.items():
            app.open_table(preset, ALL_PRESETS[preset])
            for seat in range(seats):
                player = f"{preset}-{seat}"
                app.credit(player, 10_000, f"c-{player}")
                app.sit_down(preset, player)
            rounds[preset], receipt = _play(app, preset, f"seed-{preset}")
        _play(app, "puxian6", "after")  # later events in the log and in the same streams
        target = rounds["puxian6"]
        document = StoreReader(app, lambda _: None).evidence(target).document()
    finally:
        app.close()
    uuid = round_uuid(target)
    return Stores(Played(data, target, str(uuid), uuid.hex, receipt, document), rounds)


@pytest.fixture
def data(stores: Stores, tmp_path: Path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(stores.played.data, copy)
    return copy


@pytest.mark.parametrize("mode", [ALL, ONE])
def test_r14_rounds_of_every_puxian_preset_audit_clean(
    stores: Stores, data: Path, mode: str
) -> None:
    """R14.2.3, R14.6: rounds with copies of a card, five and six players and the horse pass
    every check of the audit, one by one and with --all."""
    for preset, round_id in stores.rounds.items():
        played = Played(data, round_id, "", "", "", "")
        audit = audit_store(data, played, mode)
        assert audit.status == 0, audit.failed()
        rules = {f["rule"] for r in audit.report["rounds"] for f in r["findings"]}
        assert {"R14.2.3", "R14.1.6", "R12", "R6", "R9"} <= rules, (preset, rules)
        assert len(audit.report["rounds"]) == (1 if mode == ONE else 4)


@pytest.mark.parametrize("mode", [ALL, ONE])
def test_r14_1_6_an_edited_horse_card_is_named(stores: Stores, data: Path, mode: str) -> None:
    """The deal's recorded ruleset gets another horse card (one a player was dealt): the deal no
    longer plays the horse the table published (R14.1.6)."""
    played = stores.played
    with attacker(data) as db:
        _, _, dealt = row(db, played.originator_id, 1)
        held = next(c for c in dealt["hands"][dealt["players"][0]] if c != "8h")
        dealt["ruleset"]["horse_card"] = held
        write_state(db, played.originator_id, 1, dealt)
    name = event_name(played, mode, "Round.Dealt", 1, position_of(data, played.originator_id, 1))
    audit = audit_store(data, played, mode)
    assert_names(audit, "CHAIN", name)
    assert_names(audit, "R14.1.6", name)


@pytest.mark.parametrize("mode", [ALL, ONE])
def test_r14_2_3_a_card_dealt_beyond_the_decks_copies_is_named(
    stores: Stores, data: Path, mode: str
) -> None:
    """A card of one hand replaced by a card already dealt as often as the deck holds it (twice
    for a suit doubled by puxian6's extra suits, once otherwise): R14.2.3 names the deal."""
    played = stores.played
    with attacker(data) as db:
        _, _, dealt = row(db, played.originator_id, 1)
        hands = dealt["hands"]
        held = Counter(c for p in dealt["players"] for c in hands[p])
        copies = {str(c): n for c, n in ALL_PRESETS["puxian6"].copies.items()}
        full = next(c for c, n in held.items() if n == copies[c])
        last = dealt["players"][-1]
        index = next(i for i, c in enumerate(hands[last]) if c != full)
        hands[last][index] = full
        write_state(db, played.originator_id, 1, dealt)
    name = event_name(played, mode, "Round.Dealt", 1, position_of(data, played.originator_id, 1))
    audit = audit_store(data, played, mode)
    assert_names(audit, "CHAIN", name)
    assert_names(audit, "R14.2.3", name)


def test_r14_an_exported_six_seat_round_audits_clean_and_its_edited_horse_is_named(
    stores: Stores, tmp_path: Path
) -> None:
    """``thirteen audit --file`` on an exported puxian6 round: clean as exported; with the deal's
    horse card edited, R14.1.6 names the deal; with a card beyond the deck's copies, R14.2.3."""
    played = stores.played
    clean = _audit_document(tmp_path, played.document)
    assert clean.status == 0, clean.stdout + clean.stderr
    name = event_name(played, ONE, "Round.Dealt", 1, 0)

    document = json.loads(played.document)
    dealt = _round_event(document, 1)["state"]
    dealt["ruleset"]["horse_card"] = "As"
    audit = _audit_document(tmp_path, document)
    assert_names(audit, "R14.1.6", name)

    document = json.loads(played.document)
    hands = _round_event(document, 1)["state"]["hands"]
    first, last = sorted(hands)[0], sorted(hands)[-1]
    copies = {str(c): n for c, n in ALL_PRESETS["puxian6"].copies.items()}
    held = Counter(c for cards in hands.values() for c in cards)
    full = next(c for c in hands[first] if held[c] == copies[c])
    hands[last][next(i for i, c in enumerate(hands[last]) if c != full)] = full
    audit = _audit_document(tmp_path, document)
    assert_names(audit, "R14.2.3", name)
