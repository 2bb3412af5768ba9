"""``thirteen replay`` and ``thirteen explain`` through the real console script, on a store
played through the application: a showdown with a special hand and a foul, a round with an
escape and a corrected foul draft, a round still in progress, a round under pile bonuses
(R6.1, fujian) and a round abandoned when one of two players escaped (R11.3)."""

from __future__ import annotations

import hashlib
import itertools
import os
import re
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from domain.arrangement import Arrangement
from domain.cards import parse_cards
from domain.ids import deal_round_id
from domain.results import RoundResult, round_result
from domain.ruleset import FUJIAN, STANDARD, Ruleset
from domain.scoring import Seat, score_round
from domain.shuffle import deal
from domain.specials import qualifying
from domain.play import Play
from domain.suggest import suggest
from service.application import Thirteen
from service.storage import protect, store_env
from tests.support.clock import ManualClock

from .conftest import SCRIPT

# A player id is user input: this one has to come out of the HTML escaped.
ODD = '<b>dee</b> & "co"'
PLAYERS = ["ann", "bob", "cy", ODD]
CARD = re.compile(r"(?:[2-9TJQKA]|10)[♠♥♦♣]")
CLAUSE = re.compile(r"; |(?<=\.) ")


@dataclass
class Store:
    data: Path
    showdown: str = ""  # four players: a special hand, a foul, two arranged hands
    escape: str = ""  # ODD escapes; bob's foul draft is corrected
    open: str = ""  # dealt, one arrangement, not revealed
    bonus: str = ""  # fujian: a pile bonus decides a pile
    abandoned: str = ""  # two players, one escapes
    results: dict[str, RoundResult] = field(default_factory=dict)
    hands: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    special_player: str = ""
    foul_player: str = ""


def _seeds() -> object:
    """Server seeds known to the test, so the client seed of each round can be chosen."""
    counter = itertools.count()
    return lambda: hashlib.sha256(struct.pack(">Q", next(counter))).digest()


def _swapped(a: Arrangement) -> Arrangement:
    return Arrangement(a.front, a.back, a.middle)


def _client_seed(app: Thirteen, table: str, request: str, fits) -> str:
    """The first client seed whose deal (R12) suits the scenario."""
    seed = bytes.fromhex(app.table(table).next_seed)
    round_id = deal_round_id(table, request)
    players = len(app.table(table).seats)
    for n in range(5000):
        hands = deal(seed, f"{request}-{n}", round_id, players)
        if fits(hands):
            return f"{request}-{n}"
    raise AssertionError(f"no client seed suits round {request}")


def _showdown_fits(hands) -> bool:
    """One hand holds a special; another fouls with middle and back swapped."""
    specials = [bool(qualifying(h)) for h in hands]
    if specials.count(True) != 1:
        return False
    return any(
        _swapped(suggest(h, STANDARD).arrangement).foul_reason() is not None
        for h, s in zip(hands, specials, strict=True)
        if not s
    )


def _bonus_fits(hands) -> bool:
    """Under fujian the suggested arrangements score differently than under standard."""
    if any(qualifying(h) for h in hands):
        return False
    seats = [Seat(f"p{k}", Play(suggest(h, FUJIAN).arrangement)) for k, h in enumerate(hands)]
    return score_round(seats, FUJIAN).points != score_round(seats, STANDARD).points


def _arrange(app: Thirteen, round_id: str, player: str, ruleset: Ruleset) -> None:
    a = suggest(app.round(round_id).hand(player), ruleset).arrangement
    assert app.arrange(round_id, player, a.front, a.middle, a.back).foul_reason is None


def build_store(data: Path) -> Store:
    clock = ManualClock()
    app = Thirteen(store_env(data, {"THIRTEEN_STORE": "sqlite"}), clock=clock, seeds=_seeds())
    protect(app)
    store = Store(data)
    try:
        app.open_table("t", STANDARD)
        for player in PLAYERS:
            app.credit(player, 1000, f"credit-{player}")
            app.sit_down("t", player)

        # 1. R5, R6.3, R6.5: a special hand and a foul at one showdown.
        seed = _client_seed(app, "t", "r1", _showdown_fits)
        round_ = app.deal("t", client_seed=seed, request_id="r1")
        store.showdown = round_.round_id
        special = next(p for p in PLAYERS if qualifying(round_.hand(p)))
        fouler = next(
            p
            for p in PLAYERS
            if p != special
            and _swapped(suggest(round_.hand(p), STANDARD).arrangement).foul_reason()
        )
        store.special_player, store.foul_player = special, fouler
        app.arrange(round_.round_id, special, [], [], [], special="any")
        foul = _swapped(suggest(round_.hand(fouler), STANDARD).arrangement)
        assert app.arrange(round_.round_id, fouler, *foul.piles).foul_reason
        for player in PLAYERS:
            if player not in (special, fouler):
                _arrange(app, round_.round_id, player, STANDARD)
        clock.advance(STANDARD.arrange_seconds + 1)  # R10.3: a foul waits for the deadline
        app.reveal(round_.round_id)

        # 2. R11: ODD escapes; R4.3: bob's foul draft is replaced before the reveal.
        round_ = app.deal("t", client_seed="escape", request_id="r2")
        store.escape = round_.round_id
        clock.advance(1)
        app.stand_up("t", ODD)
        draft = _swapped(suggest(round_.hand("bob"), STANDARD).arrangement)
        app.arrange(round_.round_id, "bob", *draft.piles)
        for player in ("ann", "bob", "cy"):
            _arrange(app, round_.round_id, player, STANDARD)
        app.reveal(round_.round_id)

        # 3. In progress: dealt, ann arranged, never revealed.
        round_ = app.deal("t", client_seed="open", request_id="r3")
        store.open = round_.round_id
        _arrange(app, round_.round_id, "ann", STANDARD)

        # 4. R6.1 pile bonuses (fujian), then 5. R11.3 an abandoned round.
        app.open_table("f", FUJIAN)
        for player in ("fay", "fox"):
            app.credit(player, 1000, f"credit-{player}")
            app.sit_down("f", player)
        seed = _client_seed(app, "f", "f1", _bonus_fits)
        round_ = app.deal("f", client_seed=seed, request_id="f1")
        store.bonus = round_.round_id
        for player in ("fay", "fox"):
            _arrange(app, round_.round_id, player, FUJIAN)
        app.reveal(round_.round_id)
        round_ = app.deal("f", client_seed="gone", request_id="f2")
        store.abandoned = round_.round_id
        app.stand_up("f", "fox")

        for round_id in (store.showdown, store.escape, store.bonus):
            store.results[round_id] = round_result(app.round(round_id))
        for round_id in (store.showdown, store.escape, store.open, store.bonus, store.abandoned):
            store.hands[round_id] = dict(app.round(round_id).hands)
    finally:
        app.close()
    return store


# --- running the console script --------------------------------------------------------------


def thirteen(*args: str) -> subprocess.CompletedProcess[str]:
    if SCRIPT is None:
        pytest.fail("the thirteen console script is not installed: run make setup")
    env = {k: v for k, v in os.environ.items() if k != "THIRTEEN_STORE"}
    return subprocess.run(
        [SCRIPT, *args], capture_output=True, text=True, timeout=60, check=False, env=env
    )


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build_store(tmp_path_factory.mktemp("explain") / "data")
