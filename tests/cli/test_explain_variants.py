"""``thirteen explain`` and ``thirteen replay`` through the real console script on R14 rounds
(``tests/support/r14_store.py``, played through the application in process): six and five
players (15 and 10 pairs), copies of a card, the horse card (马牌), a five of a kind (五同), a
six of a kind (六六大顺) declared, and the cards dealt to no one (R14.1–R14.4)."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

from domain.fairness.shuffle import undealt
from domain.rules.cards import parse_card
from domain.rules.ruleset import PUXIAN6
from tests.support.chromium import png_pixels, screenshot
from tests.support.cli import thirteen as run_thirteen
from tests.support.r14_store import FIVE, SIX, R14Store, build_r14_store

HORSE = "8♥"
WIDTH, HEIGHT = 1280, 2400


@functools.cache  # the store does not change once built; several tests read the same report
def thirteen(*args: str) -> subprocess.CompletedProcess[str]:
    return run_thirteen(*args)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> R14Store:
    return build_r14_store(tmp_path_factory.mktemp("r14") / "data")


def explain(store: R14Store, round_id: str, *more: str) -> str:
    done = thirteen("explain", "--data", str(store.data), "--round", round_id, *more)
    assert done.returncode == 0, done.stderr
    assert "NOTE" not in done.stdout  # piles × scoop (+ bonus) × horse × home run = the points
    return done.stdout


def _player_block(text: str, player: str) -> list[str]:
    """A player's lines under "Players": their line, then the indented ones below it."""
    lines = text.split("\nPlayers")[1].split("\n\n")[0].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"  {player} "))
    block = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith("   ") or line.lstrip().startswith("undealt"):
            break
        block.append(line)
    return block


def _symbol(card: str) -> str:
    return parse_card(card).symbol()


# --- text ------------------------------------------------------------------------------------


@pytest.mark.parametrize(("which", "players"), [("horse", SIX), ("five", FIVE)])
def test_r14_2_6_explain_lays_out_15_or_10_pairs_with_a_grid_of_points(
    store: R14Store, which: str, players: list[str]
) -> None:
    """Each unordered pair once (15 with six players, 10 with five), and a grid of every pair's
    points whose totals are the recorded points."""
    round_id = getattr(store, which)
    text = explain(store, round_id)
    pairs = len(players) * (len(players) - 1) // 2
    assert f"  {pairs} pairs at a glance: points for the row's player" in text
    compared = re.findall(r"^  (\S+) vs (\S+): ", text, re.M)
    assert len(compared) == pairs
    assert {frozenset(p) for p in compared} == {
        frozenset((a, b)) for i, a in enumerate(players) for b in players[i + 1 :]
    }
    grid = text.split("pairs at a glance")[1].splitlines()[2 : 2 + len(players)]
    for row, player in zip(grid, players, strict=True):
        cells = row.split()
        assert cells[0] == player
        assert cells[1 + players.index(player)] == "·"
        total = int(cells[-1]) if cells[-1] != "0" else 0
        assert total == store.points[round_id][player]
        assert sum(int(c) for c in cells[1:-1] if c != "·") == total


def test_r14_2_3_explain_shows_each_copy_of_a_card(store: R14Store) -> None:
    """Two copies of a card are two cards, in the hand as dealt and in the piles."""
    text = explain(store, store.horse)
    copies = 0
    for player, hand in store.hands[store.horse].items():
        block = _player_block(text, player)
        dealt = block[1].split("dealt", 1)[1].replace("[", "").replace("]", "").split()
        assert Counter(dealt) == Counter(_symbol(c) for c in hand)
        piles = [
            c
            for line in block
            if line.split()[0] in ("front", "middle", "back")
            for c in line.split()[1:]
            if re.fullmatch(r"\[?[2-9TJQKA][♠♥♦♣]\]?", c)
        ]
        assert Counter(c.strip("[]") for c in piles) == Counter(dealt)
        copies += sum(n - 1 for n in Counter(hand).values())
    assert copies > 0  # the scenario holds copies


def test_r14_1_explain_marks_the_horse_on_the_holder_s_cards_and_gives_each_pair_its_factor(
    store: R14Store,
) -> None:
    text = explain(store, store.horse)
    assert f"horse card 马牌 {HORSE}: its holder's pairs ×2, both holders cancel (R14.1)" in text
    for player in SIX:
        block = "\n".join(_player_block(text, player))
        if player == store.holder:
            assert f"[{HORSE}]" in block.splitlines()[1]  # the hand as dealt
            assert f"holds the horse card 马牌 {HORSE} (in brackets)" in block
        else:
            assert "[" not in block and "horse" not in block
    comparisons = text.split("\nComparisons (R6)")[1].split("\n\n")[1]  # after the grid
    pairs = re.split(r"\n  (?=\S+ vs \S+: )", comparisons)
    assert len(pairs) == 15
    for pair in pairs:
        a, b = pair.split(":")[0].split(" vs ")
        multipliers = next(line for line in pair.splitlines() if "multipliers:" in line)
        if store.holder in (a, b):
            assert f"horse 马 ×2: {store.holder} holds it (R14.1.4)" in multipliers
        else:
            assert "horse" not in multipliers


def test_r14_1_explain_for_the_holder_multiplies_every_pair_by_the_horse(store: R14Store) -> None:
    text = explain(store, store.horse, "--player", store.holder)
    view = text.split("From ")[1].split("\nPlayers")[0]
    results = re.findall(r"Result against (\S+): .*", view)
    assert len(results) == 5
    assert view.count("(you hold the horse 马, R14.1.4)") == 5


def test_r14_3_1_explain_names_a_five_of_a_kind_in_words_and_chinese(store: R14Store) -> None:
    block = "\n".join(_player_block(explain(store, store.horse), store.five_kind))
    assert re.search(r"(middle|back) .*  five of a kind 五同, \w+", block), block


def test_r14_4_3_explain_and_replay_name_six_of_a_kind_in_chinese(store: R14Store) -> None:
    text = explain(store, store.six)
    assert "two_fives_one_trips 三皇五帝 26 points, six_of_a_kind 六六大顺 20 points" in text
    block = "\n".join(_player_block(text, store.six_kind))
    assert "special hand six_of_a_kind (六六大顺)" in block
    assert "declared 'six_of_a_kind': six_of_a_kind (六六大顺), 20 points" in block
    done = thirteen("replay", "--data", str(store.data), "--round", store.six)
    assert done.returncode == 0, done.stderr
    assert "declared 'six_of_a_kind': six_of_a_kind 六六大顺" in done.stdout


def test_r14_1_4_a_special_hand_against_the_horse_holder_is_multiplied_by_the_horse(
    store: R14Store,
) -> None:
    """R14.1.4: whatever the pair scores under R6.5 (a special's fixed points) × the horse."""
    text = explain(store, store.six, "--player", store.six_kind)
    holder = store.six_holder
    a, b = sorted((store.six_kind, holder), key=SIX.index)
    pair = text.split(f"\n  {a} vs {b}: ")[1].split("\n  ")[0:8]
    multipliers = next(line for line in pair if line.startswith("  multipliers:"))
    points = 20 * 2 if a == store.six_kind else -20 * 2
    assert multipliers == (
        f"  multipliers: a special hand's fixed points (R6.5, R6.6), horse 马 ×2: {holder} "
        f"holds it (R14.1.4) = {points:+d}"
    )
    view = text.split("From ")[1].split("\nPlayers")[0]
    assert (
        f"beats {holder}'s hand for its fixed 20 points, no scoop: +40 (R6.5); "
        f"horse 马 ×2: {holder} holds it (R14.1.4)"
    ) in view
    assert store.points[store.six][store.six_kind] == 20 * 4 + 40  # five pairs, one doubled


def _undealt(store: R14Store, round_id: str, client_seed: str) -> list[str]:
    steps = json.loads(
        thirteen("replay", "--data", str(store.data), "--round", round_id, "--json").stdout
    )
    seed = bytes.fromhex(steps[-1]["state"]["server_seed"])
    return [str(c) for c in undealt(seed, client_seed, round_id, 5, PUXIAN6.deck, 6)]


def test_r14_2_4_explain_and_replay_publish_the_13_cards_dealt_to_no_one(store: R14Store) -> None:
    """Five players from 78 cards: the 13 left, recomputed here from the revealed seed, are in
    the replay's reveal and the report; with the hands they are the deck."""
    expected = _undealt(store, store.five, "five")
    assert len(expected) == 13
    held = Counter(c for hand in store.hands[store.five].values() for c in hand)
    assert held + Counter(expected) == Counter(str(c) for c in PUXIAN6.deck)
    steps = json.loads(
        thirteen("replay", "--data", str(store.data), "--round", store.five, "--json").stdout
    )
    assert steps[-1]["event"]["type"] == "Revealed"
    assert steps[-1]["event"]["details"]["undealt"] == expected
    text = explain(store, store.five)
    shown = " ".join(_symbol(c) for c in expected)
    assert f"  undealt (13 cards, R14.2.4): {shown}" in text
    done = thirteen("replay", "--data", str(store.data), "--round", store.five)
    assert f"undealt (13 cards, R14.2.4): {' '.join(expected)}" in done.stdout


def test_r14_a_round_in_progress_shows_no_undealt_card_nor_horse(store: R14Store) -> None:
    text = explain(store, store.open)
    assert "undealt" not in text and "[" not in text
    assert "horse card 马牌 8♥" in text  # the ruleset is public (R14.1.6)
    steps = json.loads(
        thirteen("replay", "--data", str(store.data), "--round", store.open, "--json").stdout
    )
    dealt = steps[0]["event"]["details"]
    assert "hands" not in dealt and "horse_holders" not in dealt


def test_r12_r14_2_4_explain_proves_a_six_seat_deal_from_78_cards(store: R14Store) -> None:
    text = explain(store, store.horse)
    assert "SHA-256(server seed) equals the commitment: yes, verified" in text
    assert (
        "the deal recomputed from the seeds (R12.3–R12.5, 6 players) equals the recorded "
        "hands: yes, verified" in text
    )


def test_r14_1_replay_names_the_horse_holder_at_the_deal(store: R14Store) -> None:
    done = thirteen("replay", "--data", str(store.data), "--round", store.horse)
    assert f"horse card 马牌 [8h] (R14.1.2): held by {store.holder}" in done.stdout
    steps = json.loads(
        thirteen("replay", "--data", str(store.data), "--round", store.horse, "--json").stdout
    )
    assert steps[0]["event"]["details"]["horse_holders"] == [store.holder]


# --- HTML --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def page(store: R14Store, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("html") / "puxian6.html"
    done = thirteen(
        "explain", "--data", str(store.data), "--round", store.horse, "--html", str(path)
    )
    assert done.returncode == 0, done.stderr
    return path


def test_r14_the_html_report_marks_the_horse_shows_copies_and_names_five_of_a_kind(
    store: R14Store, page: Path
) -> None:
    html = page.read_text(encoding="utf-8")
    assert html.count('class="card red horse"') == 1  # the holder's 8♥, in a pile
    assert html.count(f'title="{HORSE}, the horse card 马牌 (R14.1)"') == 1
    assert html.count('<span class="badge horse">horse</span>') == 1  # the holder's box
    assert html.count('<span class="badge horse">horse ×2</span>') == 5  # the holder's pairs
    assert "holds the horse card 马牌 8♥: each of their pairs ×2 (R14.1)" in html
    held = Counter(c for hand in store.hands[store.horse].values() for c in hand)
    for card, count in held.items():
        if _symbol(card) != HORSE:  # each copy of a card is a card of its own
            assert html.count(f'title="{_symbol(card)}"') == count, card
    assert "five of a kind 五同, " in html
    assert "Pairs at a glance" in html and html.count('class="pair"') == 15
    assert '<div class="pairs many">' in html


def test_r14_2_4_the_html_report_shows_the_undealt_cards(store: R14Store, tmp_path: Path) -> None:
    path = tmp_path / "five.html"
    done = thirteen(
        "explain", "--data", str(store.data), "--round", store.five, "--html", str(path)
    )
    assert done.returncode == 0, done.stderr
    html = path.read_text(encoding="utf-8")
    undealt_part = html.split("Undealt cards (R14.2.4)")[1].split("</div>")[0]
    expected = _undealt(store, store.five, "five")
    assert re.findall(r'title="([^"]+)"', undealt_part) == [_symbol(c) for c in expected]
    assert "13 cards of the 78-card deck were dealt to no one" in html


def test_r14_the_puxian6_html_report_renders_in_headless_chromium(
    page: Path, tmp_path: Path
) -> None:
    """A real browser draws the six-player page; kept at THIRTEEN_R14_SCREENSHOT when set."""
    data = screenshot(page, tmp_path / "puxian6.png", WIDTH, HEIGHT)
    assert len(data) > 60_000, f"the screenshot is only {len(data)} bytes: a blank page?"
    pixels = png_pixels(data)
    assert len(set(pixels[: len(pixels) // 2])) > 64
    keep = os.environ.get("THIRTEEN_R14_SCREENSHOT")
    if keep:
        Path(keep).write_bytes(data)
