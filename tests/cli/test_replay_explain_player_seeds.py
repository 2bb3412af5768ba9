"""``thirteen replay`` and ``thirteen explain`` (text and HTML) of rounds dealt with player
seeds (R12.8), through the real console script: each player's seed is shown in the fairness
proof with the client seed they turned it into, and the deal is said to be recomputed with
them. (Rounds without player seeds render exactly as before: ``tests/fixtures/v1_outputs``.)"""

from __future__ import annotations

import hashlib
import json
import subprocess
from dataclasses import dataclass
from html import escape as html_escape
from pathlib import Path

import pytest

from domain.fairness.seeds import KeyRing
from domain.rules.ruleset import STANDARD
from domain.rules.suggest import suggest
from service.application import Thirteen
from service.eventstore.storage import store_env
from tests.support.cli import thirteen
from tests.support.clock import ManualClock

PLAYERS = ["ann", "bob", "cy"]
SEEDS = {"cy": "种子 <b>cy</b>", "ann": "ann's phone"}  # bob gives none
IN_SEAT_ORDER = '[["ann","ann\'s phone"],["cy","\\u79cd\\u5b50 <b>cy</b>"]]'
EFFECTIVE = f"dealer|{hashlib.sha256(IN_SEAT_ORDER.encode()).hexdigest()}"


@dataclass(frozen=True)
class Store:
    data: Path
    revealed: str
    open: str


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    data = tmp_path_factory.mktemp("seeds") / "data"
    keys = KeyRing.of([hashlib.sha256(b"test_replay_explain_player_seeds").digest()])
    app = Thirteen(
        store_env(data, {"THIRTEEN_STORE": "sqlite"}), clock=ManualClock(), seed_keys=keys
    )
    app.database.protect()
    try:
        app.open_table("t", STANDARD)
        for player in PLAYERS:
            app.credit(player, 1000, f"credit-{player}")
            app.sit_down("t", player)
        revealed = app.deal("t", "dealer", "r1", player_seeds=SEEDS)
        for player in PLAYERS:
            best = suggest(revealed.hand(player), STANDARD).arrangement
            app.arrange(revealed.round_id, player, best.front, best.middle, best.back)
        app.reveal(revealed.round_id)
        still_open = app.deal("t", "dealer", "r2", player_seeds={"bob": "bob's"})
    finally:
        app.close()
    return Store(data, revealed.round_id, still_open.round_id)


def succeeded(*args: str) -> subprocess.CompletedProcess[str]:
    """``thirteen ARGS``, which must succeed."""
    done = thirteen(*args)
    assert done.returncode == 0, done.stderr
    return done


def test_r12_8_replay_shows_the_player_seeds_and_the_client_seed_they_made(store: Store) -> None:
    steps = json.loads(
        succeeded("replay", "--data", str(store.data), "--round", store.revealed, "--json").stdout
    )
    details = steps[0]["event"]["details"]
    assert details["client_seed"] == "dealer"
    assert details["player_seeds"] == {"ann": "ann's phone", "cy": "种子 <b>cy</b>"}
    assert details["effective_client_seed"] == EFFECTIVE
    text = succeeded("replay", "--data", str(store.data), "--round", store.revealed).stdout
    assert 'player seeds (R12.8): ann "ann\'s phone", cy "种子 <b>cy</b>"' in text
    assert f'dealt with the client seed "{EFFECTIVE}"' in text


def test_r12_8_explain_lists_each_players_seed_and_recomputes_the_deal_with_them(
    store: Store,
) -> None:
    out = succeeded("explain", "--data", str(store.data), "--round", store.revealed).stdout
    proof = out.split("Fairness proof (R12)")[1]
    assert "client seed 'dealer', round id" in proof
    assert "player seeds, each given from the player's device with the deal (R12.8):" in proof
    listed = proof.split("(R12.8):\n")[1].split("the deal used")[0].rstrip()
    assert listed.splitlines() == ['    ann "ann\'s phone"', "    cy '种子 <b>cy</b>'"]  # not bob
    assert (
        f"the deal used the client seed with the player seeds mixed in (R12.8):\n    {EFFECTIVE!r}"
    ) in proof
    assert (
        "the deal recomputed from the seeds and the player seeds (R12.3–R12.5, R12.8, 3 players)"
        " equals the recorded hands: yes, verified"
    ) in proof


def test_r12_8_the_html_report_shows_the_seeds_escaped_and_verifies_the_deal(
    store: Store, tmp_path: Path
) -> None:
    page = tmp_path / "seeds.html"
    succeeded("explain", "--data", str(store.data), "--round", store.revealed, "--html", str(page))
    html = page.read_text(encoding="utf-8")
    assert "player seeds, each from the player's device (R12.8)" in html
    assert html_escape(repr("种子 <b>cy</b>")) in html and "<b>cy</b>" not in html
    assert html_escape(repr(EFFECTIVE)) in html
    assert (
        "✔ verified</span> the deal recomputed from the seeds and the player seeds equals the "
        "recorded hands"
    ) in html


def test_r12_8_a_round_in_progress_shows_its_player_seeds_but_no_card(store: Store) -> None:
    """The seeds are public from the deal on (they cannot change it any more); the cards and
    the server seed stay hidden until the round is over."""
    out = succeeded("explain", "--data", str(store.data), "--round", store.open).stdout
    assert '  bob "bob\'s"' in out
    assert "server seed: not revealed yet" in out
    assert "equals the recorded hands" not in out
    text = succeeded("replay", "--data", str(store.data), "--round", store.open).stdout
    assert 'player seeds (R12.8): bob "bob\'s"' in text
    assert "hands: hidden until the round is over" in text
