"""The dispute console's round page for R14 rounds, in English and Chinese: six players (15
pairs), copies of a card, the horse card (马牌), a five of a kind (五同), six_of_a_kind (六六大顺)
and the cards dealt to no one. The rounds are played through the application in process
(``tests/support/r14_store.py``: the service does not open R14 tables over gRPC yet); a real
server then serves that store and the real console reads it over gRPC, as it reads any round.
The audit verdict on these rounds is the audit's (``domain/audit``), not asserted here."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from domain.rules.cards import parse_card
from domain.rules.ruleset import PUXIAN6
from service.web.markup import link
from tests.support.clock import ManualClock
from tests.support.console import Console, Page
from tests.support.r14_store import SIX, R14Store, build_r14_store
from tests.support.server import ServerThread

HORSE = "8♥"


class World:
    def __init__(self, data: Path) -> None:
        self.store: R14Store = build_r14_store(data)
        self.server = ServerThread(data, {"THIRTEEN_STORE": "sqlite"}, ManualClock())
        self.console = Console(self.server.address)

    def close(self) -> None:
        self.console.stop()
        self.server.stop()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    built = World(tmp_path_factory.mktemp("console_r14") / "data")
    yield built
    built.close()


def ok(world: World, path: str) -> Page:
    page = world.console.get(path)
    assert page.status == 200, (path, page.status, page.text[:2000], world.console.log)
    return page


def section(page: Page, ident: str) -> str:
    found = re.search(rf'id="{ident}".*?</section>', page.text, re.S)
    assert found, f"no section {ident!r}"
    return found.group(0)


def _symbol(card: str) -> str:
    return parse_card(card).symbol()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_r14_the_round_page_shows_six_players_copies_and_the_horse(world: World, lang: str) -> None:
    store = world.store
    page = ok(world, link("/rounds", store.horse) + f"?lang={lang}")
    hands = section(page, "hands")
    held = Counter(c for hand in store.hands[store.horse].values() for c in hand)
    for card, count in held.items():  # R14.2.3: each copy a card of its own
        if _symbol(card) != HORSE:
            assert hands.count(f'title="{_symbol(card)}"') == count, card
    assert hands.count('class="card red horse"') == 1  # R14.1.2: on the holder's cards
    for player in SIX:
        assert f">{player}</a>" in hands
    comparisons = section(page, "comparisons")
    assert comparisons.count('<div class="pair">') == 15  # R14.2.6
    assert comparisons.count("badge horse") == 5  # the holder's pairs, each ×2
    assert "horse 马 ×2: " + store.holder + " holds it (R14.1.4)" in comparisons
    if lang == "zh":
        assert '<span class="badge horse">马牌</span>' in hands
        assert f"持有马牌 {HORSE}：其每一对比牌 ×2 (R14.1)" in hands
        assert "五同 five of a kind, " in hands
        assert "比牌一览：行中玩家所得墩数 (R6, R14.2.6)" in comparisons
    else:
        assert '<span class="badge horse">horse</span>' in hands
        assert f"holds the horse card 马牌 {HORSE}: each of their pairs ×2 (R14.1)" in hands
        assert "five of a kind 五同, " in hands
        assert "Pairs at a glance" in comparisons


def test_r14_4_3_the_round_page_names_six_of_a_kind_in_chinese(world: World) -> None:
    page = ok(world, link("/rounds", world.store.six))
    assert "special hand six_of_a_kind (六六大顺)" in section(page, "hands")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_r14_2_4_the_round_page_of_five_players_shows_the_13_undealt_cards(
    world: World, lang: str
) -> None:
    page = ok(world, link("/rounds", world.store.five) + f"?lang={lang}")
    hands = section(page, "hands")
    part = hands.split('<div class="undealt">')[1].split("</div>")[0]
    shown = re.findall(r'title="([^"]+)"', part)
    assert len(shown) == 13
    dealt = Counter(
        _symbol(c) for hand in world.store.hands[world.store.five].values() for c in hand
    )
    assert dealt + Counter(shown) == Counter(c.symbol() for c in PUXIAN6.deck)  # R14.2.3
    heading = "未发出的牌 (R14.2.4)" if lang == "zh" else "Undealt cards (R14.2.4)"
    assert heading in part
    assert section(page, "comparisons").count('<div class="pair">') == 10


def test_r14_2_3_a_player_s_game_recall_shows_each_copy_of_a_card(world: World) -> None:
    store = world.store
    player = store.five_kind  # holds five of a rank: copies for sure
    page = ok(world, link("/players", player))
    row = next(r for r in page.text.split("<tr") if store.horse in r)
    shown = Counter(re.findall(r'title="([^"]+)"', row))
    assert shown == Counter(_symbol(c) for c in store.hands[store.horse][player])
    assert max(shown.values()) > 1
