"""``thirteen replay`` and ``thirteen explain`` through the real console script, on a store
played through the application: a showdown with a special hand and a foul, a round with an
escape and a corrected foul draft, a round still in progress, a round under pile bonuses
(R6.1, fujian) and a round abandoned when one of two players escaped (R11.3)."""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import re
import struct
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from html import escape as html_escape
from pathlib import Path

import pytest

from domain.fairness.seeds import KeyRing
from domain.fairness.shuffle import deal
from domain.ids import deal_round_id, round_uuid
from domain.results import RoundResult, round_result
from domain.rules.arrangement import Arrangement
from domain.rules.cards import Card, by_strength, format_cards, parse_cards
from domain.rules.hands import describe
from domain.rules.play import Play
from domain.rules.ruleset import FUJIAN, STANDARD, Ruleset
from domain.rules.scoring import Seat, score_round
from domain.rules.specials import qualifying
from domain.rules.suggest import suggest
from service.application import Thirteen
from service.eventstore.storage import store_env
from tests.support.chromium import png_pixels, screenshot
from tests.support.cli import thirteen as run_thirteen
from tests.support.clock import ManualClock

# A player id is user input: this one has to come out of the HTML escaped.
ODD = '<b>dee</b> & "co"'
PLAYERS = ["ann", "bob", "cy", ODD]
CARD = re.compile(r"(?:[2-9TJQKA]|10)[♠♥♦♣]")
CLAUSE = re.compile(r"; |(?<=\.) ")
WIDTH, HEIGHT = 1280, 1600


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
    open_seed: str = ""  # the unrevealed server seed of the round in progress
    event_types: dict[str, list[str]] = field(default_factory=dict)


KEYS = KeyRing.of([hashlib.sha256(b"test_replay_explain").digest()])
Hands = tuple[tuple[Card, ...], ...]  # a deal's hands in seat order


def _nonces() -> Callable[[], bytes]:
    """Commitment nonces fixed by the test, so that the store (and the client seed each round
    needs) is the same at every run."""
    counter = itertools.count()
    return lambda: hashlib.sha256(struct.pack(">Q", next(counter))).digest()[:16]


def _swapped(a: Arrangement) -> Arrangement:
    return Arrangement(a.front, a.back, a.middle)


def _client_seed(app: Thirteen, table: str, request: str, fits: Callable[[Hands], bool]) -> str:
    """The first client seed whose deal (R12) suits the scenario."""
    seed = app.table(table).committed_seed(app.seed_keys)
    round_id = deal_round_id(table, request)
    players = len(app.table(table).seats)
    for n in range(5000):
        hands = deal(seed, f"{request}-{n}", round_id, players)
        if fits(hands):
            return f"{request}-{n}"
    raise AssertionError(f"no client seed suits round {request}")


def _showdown_fits(hands: Hands) -> bool:
    """One hand holds a special; another fouls with middle and back swapped."""
    specials = [bool(qualifying(h)) for h in hands]
    if specials.count(True) != 1:
        return False
    return any(
        _swapped(suggest(h, STANDARD).arrangement).foul_reason() is not None
        for h, s in zip(hands, specials, strict=True)
        if not s
    )


def _bonus_fits(hands: Hands) -> bool:
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
    app = Thirteen(
        store_env(data, {"THIRTEEN_STORE": "sqlite"}), clock=clock, seed_keys=KEYS, nonces=_nonces()
    )
    app.database.protect()
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
        assert app.arrange(round_.round_id, fouler, foul.front, foul.middle, foul.back).foul_reason
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
        app.arrange(round_.round_id, "bob", draft.front, draft.middle, draft.back)
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
        store.open_seed = app.table("t").committed_seed(KEYS).hex()  # round 3 was dealt from it
        for round_id in (store.showdown, store.escape, store.open, store.bonus, store.abandoned):
            store.hands[round_id] = dict(app.round(round_id).hands)
            stored = app.recorder.select_events(round_uuid(round_id))
            store.event_types[round_id] = [e.topic.rsplit(".", 1)[-1] for e in stored]
    finally:
        app.close()
    return store


# --- running the console script --------------------------------------------------------------


@functools.cache  # the store does not change once built; several tests read the same report
def thirteen(*args: str) -> subprocess.CompletedProcess[str]:
    return run_thirteen(*args)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Store:
    return build_store(tmp_path_factory.mktemp("explain") / "data")


def _one_line_error(done: subprocess.CompletedProcess[str]) -> None:
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr


def _clauses(explanation: str) -> list[str]:
    return CLAUSE.split(explanation)


def _signed(value: int) -> str:
    return f"{value:+d}" if value else "0"


def _highest_first(cards: list[str]) -> list[str]:
    return format_cards(by_strength(parse_cards(cards)))


def _symbols(cards: list[str]) -> list[str]:
    return [c.symbol() for c in parse_cards(cards)]


def _two_letter(card: str) -> re.Pattern[str]:
    return re.compile(rf"(?<![0-9A-Za-z]){card}(?![0-9A-Za-z])")


# --- replay -----------------------------------------------------------------------------------


def test_replay_lists_every_event_of_the_round_in_order_with_the_state_after_it(
    store: Store,
) -> None:
    done = thirteen("replay", "--data", str(store.data), "--round", store.showdown, "--json")
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)
    expected = store.event_types[store.showdown]
    assert [s["event"]["type"] for s in steps] == expected
    assert expected[0] == "Dealt" and expected[-1] == "Revealed"
    assert [s["event"]["version"] for s in steps] == list(range(1, len(expected) + 1))
    assert [s["state"]["phase"] for s in steps] == ["dealt"] * (len(steps) - 1) + ["revealed"]
    result = store.results[store.showdown]
    final = {p["player_id"]: p for p in steps[-1]["state"]["players"]}
    for player in result.players:
        assert final[player.player_id]["points"] == player.points
        assert final[player.player_id]["coins"] == player.coins
    assert final[store.special_player]["status"] == "special"
    assert final[store.foul_player]["status"] == "foul"
    assert final[store.foul_player]["foul_reason"]
    assert steps[-1]["state"]["server_seed"] == result.server_seed


def test_replay_text_shows_each_event_with_version_time_and_who(store: Store) -> None:
    done = thirteen("replay", "--data", str(store.data), "--round", store.showdown)
    assert done.returncode == 0, done.stderr
    heads = re.findall(r"^v(\d+) +(\S+)  (\w+) by (.+), called by (.+)$", done.stdout, re.MULTILINE)
    assert [int(v) for v, *_ in heads] == list(range(1, len(heads) + 1))
    assert [kind for _, _, kind, _, _ in heads] == store.event_types[store.showdown]
    assert {who for *_, who, _ in heads} == {"the service", *PLAYERS}
    assert {caller for *_, caller in heads} == {"thirteen:in-process"}  # issue 11
    assert "phase revealed, server seed " + store.results[store.showdown].server_seed in done.stdout


def test_r11_r4_3_replay_shows_the_escape_transfers_and_a_foul_draft_replaced(store: Store) -> None:
    done = thirteen("replay", "--data", str(store.data), "--round", store.escape, "--json")
    assert done.returncode == 0, done.stderr
    steps = json.loads(done.stdout)
    escaped = next(s for s in steps if s["event"]["type"] == "PlayerEscaped")
    transfers = escaped["event"]["details"]["transfers"]
    assert escaped["event"]["who"] == ODD and transfers[ODD] < 0
    assert sum(transfers.values()) == 0  # R7.2
    assert escaped["state"]["escapes"] == {ODD: transfers}
    bob = [
        next(p for p in s["state"]["players"] if p["player_id"] == "bob")["status"]
        for s in steps
        if s["event"]["who"] == "bob"
    ]
    assert bob == ["foul draft", "arranged"]
    text = thirteen("replay", "--data", str(store.data), "--round", store.escape).stdout
    assert "escape transfers (R11): " in text and "foul draft (" in text


def test_replay_of_a_round_in_progress_hides_every_card_and_submission(store: Store) -> None:
    for args in ([], ["--json"]):
        done = thirteen("replay", "--data", str(store.data), "--round", store.open, *args)
        assert done.returncode == 0, done.stderr
        for hand in store.hands[store.open].values():
            for card in hand:
                assert not _two_letter(card).search(done.stdout), card
        assert store.open_seed not in done.stdout
        assert "hidden until the round is over" in done.stdout
    steps = json.loads(done.stdout)
    assert [p["status"] for p in steps[-1]["state"]["players"]] == ["submitted", "dealt", "dealt"]


def test_r11_3_replay_of_an_abandoned_round_ends_with_the_seed_published(store: Store) -> None:
    done = thirteen("replay", "--data", str(store.data), "--round", store.abandoned, "--json")
    steps = json.loads(done.stdout)
    assert [s["event"]["type"] for s in steps] == ["Dealt", "PlayerEscaped", "Abandoned"]
    assert steps[-1]["state"]["phase"] == "abandoned"
    assert steps[-1]["state"]["server_seed"]


# --- explain ----------------------------------------------------------------------------------


def test_explain_shows_the_table_the_hands_and_every_pile_in_words(store: Store) -> None:
    done = thirteen("explain", "--data", str(store.data), "--round", store.showdown)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "table t, round 1 of the table" in out
    assert "base stake 10 coin(s) per point" in out
    assert "ruleset standard:" in out and "scoop ×2 (R6.2)" in out
    for player in store.results[store.showdown].players:
        assert " ".join(_symbols(_highest_first(player.cards))) in out
        if player.special:
            assert f"declared 'any': {player.special}" in out
            continue
        arrangement = Arrangement.of(
            *(parse_cards(p) for p in (player.front, player.middle, player.back))
        )
        for name, value in zip(("front", "middle", "back"), arrangement.values(), strict=True):
            assert re.search(rf"^ +{name} +[^\n]*  {re.escape(describe(value))}$", out, re.M)
    foul = next(p for p in store.results[store.showdown].players if p.foul)
    assert f"foul: {foul.foul_reason}" in out


def test_r6_explain_gives_each_pair_in_words_with_multipliers_and_points(store: Store) -> None:
    out = thirteen("explain", "--data", str(store.data), "--round", store.showdown).stdout
    result = store.results[store.showdown]
    assert len(result.pairs) == 6
    for pair in result.pairs:
        for clause in _clauses(pair.explanation):
            assert f"      {clause}\n" in out, clause
        assert f"points: {pair.a} {_signed(pair.points)}, {pair.b} {_signed(-pair.points)}" in out
    scooped = [p for p in result.pairs if p.scoop]
    assert scooped and out.count("scoop ×2 by ") == len(scooped)
    specials = [p for p in result.pairs if not p.piles]
    assert out.count("none: a special hand scores its fixed points (R6.5, R6.6)") == len(specials)


def test_r6_1_explain_shows_a_pile_bonus_under_fujian(store: Store) -> None:
    out = thirteen("explain", "--data", str(store.data), "--round", store.bonus).stdout
    assert "pile bonuses (R6.1): front three of a kind 3; middle full house 2" in out
    (pair,) = store.results[store.bonus].pairs
    assert "(worth " in pair.explanation
    multipliers = re.search(r"multipliers: \(([^)]*)\)", out)
    assert multipliers is not None, out
    terms = multipliers.group(1).split()
    assert any(abs(int(t)) > 1 for t in terms)


def test_r7_r9_explain_shows_gross_and_settled_coins_per_player(store: Store) -> None:
    out = thirteen("explain", "--data", str(store.data), "--round", store.escape).stdout
    assert "gross = points × base 10" in out
    result = store.results[store.escape]
    for player in result.players:
        row = re.search(rf"^  {re.escape(player.player_id)} +(\S+) +(\S+) +(\d+) +(\S+)", out, re.M)
        assert row is not None, player.player_id
        assert int(row.group(1)) == player.points
        assert int(row.group(2)) == player.points * result.base_stake
        assert int(row.group(4)) == player.coins
    assert re.search(rf"^  {re.escape(ODD)} left between the deal and the showdown: ", out, re.M)


def test_r12_explain_proves_the_deal_fair(store: Store) -> None:
    for round_id in (store.showdown, store.abandoned):
        out = thirteen("explain", "--data", str(store.data), "--round", round_id).stdout
        assert "Fairness proof (R12)" in out
        assert re.search(r"commitment published before the deal: [0-9a-f]{64}\n", out)
        assert re.search(r"when the table opened|ended, before the deal", out)
        assert re.search(r"server seed revealed [0-9a-f]{64}\n", out)
        assert "SHA-256(server seed) equals the commitment: yes, verified" in out
        assert "equals the recorded hands: yes, verified" in out
    assert (
        store.results[store.showdown].server_seed
        in thirteen("explain", "--data", str(store.data), "--round", store.showdown).stdout
    )


def test_explain_for_a_player_puts_their_pairs_first_and_says_why(store: Store) -> None:
    player = store.foul_player
    done = thirteen(
        "explain", "--data", str(store.data), "--round", store.showdown, "--player", player
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"From {player}'s point of view" in out
    points = next(p.points for p in store.results[store.showdown].players if p.player_id == player)
    assert f"You lost {abs(points)} points" in out
    assert "You are foul (" in out and "wins against your foul hand: -1" in out
    assert re.search(r"Result against .+: -\d+ = piles -3 × 2 \(.+ scoops you, R6\.2\)", out)
    headers = re.findall(r"^  (.+) vs (.+): ", out.split("Comparisons (R6)")[1], re.M)
    mine = [player in pair for pair in headers]
    assert mine == sorted(mine, reverse=True) and mine.count(True) == 3


def test_explain_for_a_player_words_each_pile_against_each_opponent(store: Store) -> None:
    out = thirteen(
        "explain", "--data", str(store.data), "--round", store.escape, "--player", "ann"
    ).stdout
    piles = re.findall(
        r"^    Your (front|middle|back) \((.+?)\) (beat|lost to|tied) (\w+)'s \1 \((.+?)\): "
        r"([+-]\d+|0)$",
        out,
        re.M,
    )
    assert len(piles) == 6  # two opponents, three piles each
    assert re.search(r"^  You (won|lost|broke even with) \d+ points", out, re.M)
    escaped = thirteen(
        "explain", "--data", str(store.data), "--round", store.escape, "--player", ODD
    ).stdout
    assert "You escaped between the deal and the showdown and paid 250 coins" in escaped


def test_explain_of_a_round_in_progress_shows_no_cards_at_all(store: Store, tmp_path: Path) -> None:
    page = tmp_path / "open.html"
    for args in ([], ["--player", "ann"], ["--html", str(page)]):
        done = thirteen("explain", "--data", str(store.data), "--round", store.open, *args)
        assert done.returncode == 0, done.stderr
        assert "NOT REVEALED YET" in done.stdout
        assert not CARD.search(done.stdout)
        for hand in store.hands[store.open].values():
            for card in hand:
                assert not _two_letter(card).search(done.stdout), card
        assert store.open_seed not in done.stdout
        assert "server seed: not revealed yet" in done.stdout
    html = page.read_text()
    assert not re.search(r"[♠♥♦♣]", html)
    assert 'class="card back"' in html and 'class="card"' not in html
    assert store.open_seed not in html


@pytest.mark.parametrize(
    "args",
    [
        ["replay", "--round", "no-such-round"],
        ["explain", "--round", "no-such-round"],
        ["replay", "--round", ""],
        ["explain", "--round", "x" * 500],
        ["replay"],
        ["explain", "--round", "ROUND", "--player", "nobody"],
        ["explain", "--round", "ROUND", "--html", "/no/such/dir/page.html"],
    ],
    ids=[
        "replay-unknown",
        "explain-unknown",
        "empty-id",
        "long-id",
        "no-round",
        "unknown-player",
        "html-unwritable",
    ],
)
def test_bad_input_gets_one_line_and_status_2(store: Store, args: list[str]) -> None:
    args = [store.showdown if a == "ROUND" else a for a in args]
    _one_line_error(thirteen(*args, "--data", str(store.data)))


def test_a_missing_store_is_reported_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    for command in ("replay", "explain"):
        done = thirteen(command, "--data", str(missing), "--round", "r")
        _one_line_error(done)
        assert "no event store" in done.stderr
    assert not missing.exists()


def test_unknown_player_message_names_the_round_s_players(store: Store) -> None:
    done = thirteen(
        "explain", "--data", str(store.data), "--round", store.escape, "--player", "nobody"
    )
    assert "'nobody' was not dealt into round" in done.stderr and "bob" in done.stderr


# --- the HTML page ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def page(store: Store, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("html") / "showdown.html"
    done = thirteen(
        "explain",
        "--data",
        str(store.data),
        "--round",
        store.showdown,
        "--player",
        store.foul_player,
        "--html",
        str(path),
    )
    assert done.returncode == 0, done.stderr
    return path


def test_the_html_report_is_one_self_contained_page(store: Store, page: Path) -> None:
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    for outside in ("http://", "https://", "<script", "<link", "src=", "url(", "@import", "@font"):
        assert outside not in html.lower(), outside
    for player in store.results[store.showdown].players:
        for symbol in _symbols(player.cards):
            assert f'title="{symbol}"' in html
    assert re.search(r'class="card red"', html) and re.search(r'class="card"', html)
    for pair in store.results[store.showdown].pairs:
        assert html_escape(pair.explanation.split(";")[0].split(". ")[0]) in html
    assert "✔ verified</span> SHA-256(server seed) equals the commitment" in html


def test_the_html_report_escapes_player_ids(page: Path) -> None:
    html = page.read_text(encoding="utf-8")
    assert ODD not in html
    assert "&lt;b&gt;dee&lt;/b&gt; &amp; &quot;co&quot;" in html


def test_the_html_report_renders_in_headless_chromium(page: Path, tmp_path: Path) -> None:
    """A real browser draws the page: the screenshot is a PNG of the window's size and far
    from blank (a blank page compresses to a few kilobytes)."""
    data = screenshot(page, tmp_path / "report.png", WIDTH, HEIGHT)
    assert len(data) > 60_000, f"the screenshot is only {len(data)} bytes: a blank page?"
    pixels = png_pixels(data)
    assert len(set(pixels[: len(pixels) // 2])) > 64  # cards, text and colour, not one fill
    keep = os.environ.get("THIRTEEN_SCREENSHOT")
    if keep:
        Path(keep).write_bytes(data)
