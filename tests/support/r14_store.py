"""A store of R14 rounds played through the application in process (the service does not open
R14 tables over gRPC yet): six players under ``puxian6`` with the horse held by one and a five
of a kind arranged, six players with a six of a kind declared, five players under ``puxian6``
(13 cards dealt to no one) revealed, and one still in progress. The offline reports
(``thirteen explain``, ``replay``) and the console's round page are tested on it."""

from __future__ import annotations

import hashlib
import itertools
import struct
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from domain.fairness.seeds import KeyRing
from domain.fairness.shuffle import deal
from domain.ids import deal_round_id
from domain.rules.cards import Card
from domain.rules.hands import Category, category_of, value5
from domain.rules.ruleset import PUXIAN6
from domain.rules.suggest import suggest
from service.application import Thirteen
from service.eventstore.storage import store_env
from tests.support.clock import ManualClock

SIX = ["ann", "bob", "cy", "dee", "eve", "fay"]
FIVE = ["gus", "hal", "ida", "jo", "kim"]
KEYS = KeyRing.of([hashlib.sha256(b"r14_store").digest()])
HORSE = PUXIAN6.horse_card
Hands = tuple[tuple[Card, ...], ...]


@dataclass
class R14Store:
    data: Path
    horse: str = ""  # six players: one holds the horse card, one arranges a five of a kind
    six: str = ""  # six players: one declares six_of_a_kind
    five: str = ""  # five players under puxian6: 13 cards left undealt
    open: str = ""  # five players, dealt, not revealed
    holder: str = ""  # who holds the horse in ``horse``
    five_kind: str = ""  # who arranges a five of a kind in ``horse``
    six_kind: str = ""  # who declares six_of_a_kind in ``six``
    six_holder: str = ""  # who holds the horse in ``six``
    hands: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    points: dict[str, dict[str, int]] = field(default_factory=dict)


def _nonces() -> Callable[[], bytes]:
    counter = itertools.count()
    return lambda: hashlib.sha256(struct.pack(">Q", next(counter))).digest()[:16]


def _client_seed(app: Thirteen, table: str, request: str, fits: Callable[[Hands], bool]) -> str:
    """The first client seed whose deal (R12, R14.2.4) suits the scenario."""
    seed = app.table(table).committed_seed(app.seed_keys)
    ruleset = app.table(table).ruleset
    round_id = deal_round_id(table, request)
    players = len(app.table(table).seats)
    for n in range(50_000):
        hands = deal(
            seed,
            f"{request}-{n}",
            round_id,
            players,
            deck=ruleset.deck,
            max_players=ruleset.max_players,
        )
        if fits(hands):
            return f"{request}-{n}"
    raise AssertionError(f"no client seed suits round {request}")


def most_of_a_rank(hand: tuple[Card, ...]) -> int:
    return max(Counter(c.rank for c in hand).values())


def arranges_five_of_a_kind(hand: tuple[Card, ...]) -> bool:
    if most_of_a_rank(hand) < 5:
        return False
    a = suggest(hand, PUXIAN6).arrangement
    return Category.FIVE_OF_A_KIND in (category_of_pile(a.middle), category_of_pile(a.back))


def category_of_pile(cards: tuple[Card, ...]) -> Category:
    return category_of(value5(cards, PUXIAN6.pile_order))


def _horse_fits(hands: Hands) -> bool:
    """Exactly one holds the horse card; someone else arranges a five of a kind; someone
    holds two copies of a card."""
    holders = [h for h in hands if PUXIAN6.holds_horse(h)]
    if len(holders) != 1 or not any(max(Counter(h).values()) > 1 for h in hands):
        return False
    return any(arranges_five_of_a_kind(h) for h in hands if h is not holders[0])


def _six_fits(hands: Hands) -> bool:
    """Someone holds six of a rank, and someone else alone holds the horse card."""
    holders = [h for h in hands if PUXIAN6.holds_horse(h)]
    six = [h for h in hands if most_of_a_rank(h) >= 6]
    return len(six) == 1 and len(holders) == 1 and holders[0] is not six[0]


def _arrange(app: Thirteen, round_id: str, player: str) -> None:
    a = suggest(app.round(round_id).hand(player), PUXIAN6).arrangement
    assert app.arrange(round_id, player, a.front, a.middle, a.back).foul_reason is None


def build_r14_store(data: Path) -> R14Store:
    clock = ManualClock()
    app = Thirteen(
        store_env(data, {"THIRTEEN_STORE": "sqlite"}), clock=clock, seed_keys=KEYS, nonces=_nonces()
    )
    store = R14Store(data)
    try:
        app.open_table("six", PUXIAN6)
        app.open_table("five", PUXIAN6)
        for table, players in (("six", SIX), ("five", FIVE)):
            for player in players:
                app.credit(player, 100_000, f"credit-{player}")
                app.sit_down(table, player)

        # 1. R14.1, R14.2, R14.3.1: the horse, copies of cards, a five of a kind.
        round_ = app.deal(
            "six", client_seed=_client_seed(app, "six", "h", _horse_fits), request_id="h"
        )
        store.horse = round_.round_id
        store.holder = next(p for p in SIX if PUXIAN6.holds_horse(round_.hand(p)))
        store.five_kind = next(
            p for p in SIX if p != store.holder and arranges_five_of_a_kind(round_.hand(p))
        )
        for player in SIX:
            _arrange(app, round_.round_id, player)
        app.reveal(round_.round_id)

        # 2. R14.4.3: six_of_a_kind 六六大顺 declared.
        round_ = app.deal(
            "six", client_seed=_client_seed(app, "six", "s", _six_fits), request_id="s"
        )
        store.six = round_.round_id
        store.six_kind = next(p for p in SIX if most_of_a_rank(round_.hand(p)) >= 6)
        store.six_holder = next(p for p in SIX if PUXIAN6.holds_horse(round_.hand(p)))
        app.arrange(round_.round_id, store.six_kind, [], [], [], special="six_of_a_kind")
        for player in SIX:
            if player != store.six_kind:
                _arrange(app, round_.round_id, player)
        app.reveal(round_.round_id)

        # 3. R14.2.4: five players from 78 cards, 13 dealt to no one; 4. one in progress.
        round_ = app.deal("five", client_seed="five", request_id="f")
        store.five = round_.round_id
        for player in FIVE:
            _arrange(app, round_.round_id, player)
        app.reveal(round_.round_id)
        round_ = app.deal("five", client_seed="open", request_id="o")
        store.open = round_.round_id
        _arrange(app, round_.round_id, FIVE[0])

        for round_id in (store.horse, store.six, store.five, store.open):
            store.hands[round_id] = {p: list(h) for p, h in app.round(round_id).hands.items()}
            store.points[round_id] = dict(app.round(round_id).points)
    finally:
        app.close()
    return store
