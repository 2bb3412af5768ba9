"""Seeded random input for the differential tests; deterministic for a given seed.

Rounds are built to reach the rules' corners, not to look like real play: random splits (many
foul), arrangements built from chosen categories, strong hands that scoop everyone, suit-swapped
twins whose piles tie, fronts and middles that R3 barely separates, wheels against K-high
straights, hands built to hold each of the 14 specials (declared by name or as `any`, with
cards or with piles), every ruleset parameter, card text in every accepted form, and balances
that cap and scale the settlement. The oracle is consulted only to keep valid lines valid
(a declaration the cards hold) and invalid lines invalid.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from typing import Any

from . import oracle
from .oracle import CATEGORIES, SPECIAL_IDS, SUITS, Card

ROYALS = range(11, 15)
FRONT_CATEGORIES = ("high_card", "pair", "three_of_a_kind")
SUIT_SYMBOL = {letter: symbol for symbol, letter in oracle.SUIT_SYMBOLS.items()}


class Deck:
    """The cards not dealt yet; every draw goes through a sorted list, so runs repeat exactly."""

    def __init__(self, rng: random.Random, cards: Sequence[Card] = oracle.DECK) -> None:
        self.rng = rng
        self.left = set(cards)

    def copy(self) -> Deck:
        return Deck(self.rng, sorted(self.left))

    def where(self, test: Callable[[Card], bool]) -> list[Card]:
        return sorted(card for card in self.left if test(card))

    def of_rank(self, rank: int) -> list[Card]:
        return self.where(lambda card: card[0] == rank)

    def of_suit(self, suit: str) -> list[Card]:
        return self.where(lambda card: card[1] == suit)

    def take(self, cards: Sequence[Card]) -> list[Card]:
        assert len(set(cards)) == len(cards) and set(cards) <= self.left, cards
        self.left -= set(cards)
        return list(cards)

    def sample(self, k: int, test: Callable[[Card], bool] = lambda card: True) -> list[Card] | None:
        pool = self.where(test)
        return self.rng.sample(pool, k) if len(pool) >= k else None

    def distinct_ranks(self, k: int, exclude: Sequence[int] = ()) -> list[Card] | None:
        """k cards of k different ranks, none of the excluded ranks."""
        ranks = [r for r in range(2, 15) if r not in exclude and self.of_rank(r)]
        if len(ranks) < k:
            return None
        return [self.rng.choice(self.of_rank(r)) for r in self.rng.sample(ranks, k)]


def window(top: int, size: int) -> list[int]:
    """Ranks of a straight with this top card; top 5 (size 5) or 3 (size 3) starts with an ace."""
    if top == size:
        return [14, *range(2, size + 1)]
    return list(range(top - size + 1, top + 1))


STRAIGHT_TOPS = list(range(5, 15))
# Wheels, 6-high, K-high and A-high straights decide the `wheel` parameter, so favour them.
STRAIGHT_WEIGHTS = [6 if top in (5, 6, 13, 14) else 1 for top in STRAIGHT_TOPS]


def _straight(deck: Deck, suited: bool, size: int = 5) -> list[Card] | None:
    rng = deck.rng
    tops = STRAIGHT_TOPS if size == 5 else list(range(3, 15))
    weights = STRAIGHT_WEIGHTS if size == 5 else [1] * len(tops)
    for _ in range(20):
        top = rng.choices(tops, weights)[0]
        ranks = window(top, size)
        if suited:
            suit = rng.choice(SUITS)
            cards = [(rank, suit) for rank in ranks]
            if set(cards) <= deck.left:
                return cards
        elif all(deck.of_rank(rank) for rank in ranks):
            return [rng.choice(deck.of_rank(rank)) for rank in ranks]
    return None


def _rank_with(deck: Deck, count: int, exclude: Sequence[int] = ()) -> int | None:
    ranks = [r for r in range(2, 15) if r not in exclude and len(deck.of_rank(r)) >= count]
    return deck.rng.choice(ranks) if ranks else None


def _group(deck: Deck, count: int, exclude: Sequence[int] = ()) -> list[Card] | None:
    rank = _rank_with(deck, count, exclude)
    return None if rank is None else deck.rng.sample(deck.of_rank(rank), count)


def _ranks(cards: Sequence[Card]) -> list[int]:
    return [rank for rank, _ in cards]


def build_pile(category: str, size: int, deck: Deck) -> list[Card] | None:
    """Draw-free attempt at a pile of about this category (the oracle decides what it is)."""
    rng = deck.rng
    if category == "straight_flush":
        return _straight(deck, suited=True, size=size)
    if category == "straight":
        return _straight(deck, suited=False, size=size)
    if category == "flush":
        suits = [suit for suit in SUITS if len(deck.of_suit(suit)) >= size]
        return rng.sample(deck.of_suit(rng.choice(suits)), size) if suits else None
    shapes = {
        "four_of_a_kind": [4],
        "full_house": [3, 2],
        "three_of_a_kind": [3],
        "two_pair": [2, 2],
        "pair": [2],
        "high_card": [],
    }
    if sum(shapes[category]) > size:
        return None
    cards: list[Card] = []
    scratch = deck.copy()
    for count in shapes[category]:
        group = _group(scratch, count, _ranks(cards))
        if group is None:
            return None
        cards += scratch.take(group)
    kickers = scratch.distinct_ranks(size - len(cards), _ranks(cards))
    return None if kickers is None else cards + kickers


def _pile_or_random(category: str, size: int, deck: Deck) -> list[Card]:
    pile = build_pile(category, size, deck)
    if pile is None:
        pile = deck.sample(size)
        assert pile is not None
    return deck.take(pile)


# ---------------------------------------------------------------------------------------------
# Normal players: {"front", "middle", "back"} as card lists


Piles = tuple[list[Card], list[Card], list[Card]]


def random_piles(deck: Deck) -> Piles:
    """13 random cards, split at random: often a foul."""
    cards = deck.sample(13)
    assert cards is not None
    deck.take(cards)
    return cards[:3], cards[3:8], cards[8:]


def _repaired(piles: Piles, wheel: str) -> Piles:
    front, middle, back = piles
    if oracle.compare_piles(middle, back, wheel) > 0:
        middle, back = back, middle
    return front, middle, back


def built_piles(deck: Deck, wheel: str, strong: bool = False, repair: float = 0.9) -> Piles:
    """Piles of chosen categories, back drawn first; usually redrawn until they do not foul."""
    rng = deck.rng
    tries = 4 if rng.random() < repair else 1
    for _ in range(tries):
        scratch = deck.copy()
        if strong:
            back_category = rng.choice(["straight_flush", "four_of_a_kind"])
            middle_category = rng.choice(["four_of_a_kind", "full_house", "flush"])
            front_category = rng.choice(["three_of_a_kind", "pair"])
        else:
            back_index = rng.choices(range(len(CATEGORIES)), [3, 6, 6, 5, 6, 5, 4, 2, 1])[0]
            back_category = CATEGORIES[back_index]
            middle_category = CATEGORIES[rng.randint(0, back_index)]
            front_category = rng.choices(FRONT_CATEGORIES, [5, 4, 1])[0]
        back = _pile_or_random(back_category, 5, scratch)
        middle = _pile_or_random(middle_category, 5, scratch)
        front = _pile_or_random(front_category, 3, scratch)
        piles = _repaired((front, middle, back), wheel) if tries > 1 else (front, middle, back)
        if not oracle.is_foul(*piles, wheel):
            break
    deck.take(piles[0] + piles[1] + piles[2])
    return piles


def twin_piles(deck: Deck, wheel: str) -> tuple[Piles, Piles] | None:
    """Two players whose piles mostly tie: one from two suits, the other its suit-swapped copy."""
    rng = deck.rng
    suits = rng.sample(SUITS, 4)
    mapping = {suits[0]: suits[2], suits[1]: suits[3]}
    model_deck = Deck(
        rng, deck.where(lambda c: c[1] in mapping and (c[0], mapping[c[1]]) in deck.left)
    )
    if len(model_deck.left) < 13:
        return None
    model = built_piles(model_deck, wheel)
    deck.take(model[0] + model[1] + model[2])
    twin = [deck.take([(rank, mapping[suit]) for rank, suit in pile]) for pile in model]
    for index, pile in enumerate(twin):
        if rng.random() < 0.3:  # this pile is drawn afresh instead, so it rarely ties
            deck.left |= set(pile)
            categories = FRONT_CATEGORIES if len(pile) == 3 else CATEGORIES[:6]
            twin[index] = _pile_or_random(rng.choice(categories), len(pile), deck)
    return model, (twin[0], twin[1], twin[2])


def r3_edge_piles(deck: Deck, wheel: str) -> Piles:
    """A front and a middle with the same category and leading ranks (R3 decides the foul)."""
    rng = deck.rng
    front: list[Card] | None = None
    middle: list[Card] | None = None
    if rng.random() < 0.5:
        rank = _rank_with(deck, 4)
        if rank is not None:
            four = rng.sample(deck.of_rank(rank), 4)
            scratch = deck.copy()
            scratch.take(four)
            kicker = scratch.distinct_ranks(1, [rank])
            if kicker is not None:
                scratch.take(kicker)
                near = [
                    r
                    for r in (kicker[0][0] - 1, kicker[0][0], kicker[0][0] + 1)
                    if r != rank and scratch.of_rank(r)
                ]
                if near:
                    middle_kicker = [rng.choice(scratch.of_rank(rng.choice(near)))]
                    scratch.take(middle_kicker)
                    rest = scratch.distinct_ranks(2, [rank, middle_kicker[0][0]])
                    if rest is not None:
                        front = four[:2] + kicker
                        middle = four[2:] + middle_kicker + rest
    else:
        tops = deck.distinct_ranks(3)
        if tops is not None:
            scratch = deck.copy()
            scratch.take(tops)
            copies = [scratch.of_rank(rank) for rank, _ in tops[:2]]
            if all(copies):
                shared = [rng.choice(options) for options in copies]
                scratch.take(shared)
                third = tops[2][0] + rng.choice([-1, 0, 1])
                rest = scratch.distinct_ranks(3, _ranks(shared)) if 2 <= third <= 14 else None
                if rest is not None and scratch.of_rank(third) and third not in _ranks(shared):
                    others = [card for card in rest if card[0] != third]
                    rest = [rng.choice(scratch.of_rank(third)), *others[:2]]
                    if len(rest) == 3:
                        front, middle = tops, shared + rest
    if front is None or middle is None:
        return built_piles(deck, wheel)
    deck.take(front + middle)
    back = _pile_or_random(rng.choice(["straight", "flush", "full_house", "two_pair"]), 5, deck)
    return _repaired((front, middle, back), wheel)


def wheel_edge_piles(deck: Deck) -> Piles:
    """Middle and back both straights, favouring wheels and K-high: the `wheel` parameter."""
    rng = deck.rng
    back = _pile_or_random("straight", 5, deck)
    middle = _pile_or_random(rng.choice(["straight", "straight", "flush", "two_pair"]), 5, deck)
    front = _pile_or_random(rng.choice(FRONT_CATEGORIES), 3, deck)
    return front, middle, back


# ---------------------------------------------------------------------------------------------
# Special hands: 13 cards built to hold one special, with a qualifying split for split patterns


def _take_all(scratch: Deck, piles: Sequence[list[Card] | None]) -> list[list[Card]] | None:
    taken = []
    for pile in piles:
        if pile is None or not set(pile) <= scratch.left:
            return None
        taken.append(scratch.take(pile))
    return taken


def _build_special(
    name: str, deck: Deck, quad_pairs: bool
) -> tuple[list[Card], Piles | None] | None:
    rng = deck.rng
    scratch = deck.copy()
    split: list[list[Card]] | None = None
    cards: list[Card] | None = None
    if name == "supreme_dragon":
        suits = [suit for suit in SUITS if len(deck.of_suit(suit)) == 13]
        cards = deck.of_suit(rng.choice(suits)) if suits else None
    elif name == "dragon":
        options = [deck.of_rank(rank) for rank in range(2, 15)]
        cards = [rng.choice(o) for o in options] if all(options) else None
    elif name == "twelve_royals":
        cards = deck.sample(13, lambda c: c[0] in ROYALS)
    elif name == "all_big":
        cards = deck.sample(13, lambda c: c[0] >= 8)
    elif name == "all_small":
        cards = deck.sample(13, lambda c: c[0] <= 8)
    elif name == "one_color":
        color = rng.choice(["sc", "hd"])
        cards = deck.sample(13, lambda c: c[1] in color)
    elif name == "three_quads":
        groups: list[list[Card]] = []
        for _ in range(3):
            group = _group(scratch, 4)
            if group is None:
                return None
            groups.append(scratch.take(group))
        single = scratch.sample(1)
        cards = [card for group in groups for card in group] + single if single else None
    elif name in ("four_trips", "five_pairs_trips", "six_pairs"):
        sizes = {
            "four_trips": [3, 3, 3, 3],
            "five_pairs_trips": [3, 2, 2, 2, 2, 2],
            "six_pairs": [2, 2, 2, 2, 2, 2],
        }[name]
        if name != "four_trips" and quad_pairs and rng.random() < 0.5:
            sizes = [4, *sizes[2:]]  # a four of a kind standing for two pairs
        groups = []
        for size in sizes:
            group = _group(scratch, size, [c[0] for g in groups for c in g])
            if group is None:
                return None
            groups.append(scratch.take(group))
        cards = [card for group in groups for card in group]
        single = scratch.sample(13 - len(cards))
        cards = cards + single if single is not None else None
    elif name == "three_straight_flushes":
        split = _take_all(
            scratch,
            [_straight(scratch, True, 3), _straight(scratch, True), _straight(scratch, True)],
        )
    elif name == "three_straights":
        split = _take_all(
            scratch,
            [_straight(scratch, False, 3), _straight(scratch, False), _straight(scratch, False)],
        )
    elif name == "three_flushes":
        split = _take_all(
            scratch,
            [
                build_pile("flush", 3, scratch),
                build_pile("flush", 5, scratch),
                build_pile("flush", 5, scratch),
            ],
        )
    elif name == "two_monsters_front_trips":
        monsters = ["four_of_a_kind", "straight_flush"]
        split = _take_all(
            scratch,
            [
                _group(scratch, 3),
                build_pile(rng.choice(monsters), 5, scratch),
                build_pile(rng.choice(monsters), 5, scratch),
            ],
        )
    if split is not None:
        front, middle, back = split
        return front + middle + back, (front, middle, back)
    if cards is None or len(cards) != 13:
        return None
    return cards, None


def special_player(deck: Deck, rules: oracle.Ruleset) -> dict[str, Any] | None:
    """A declaration the cards hold: the built special, another one they hold, or `any`."""
    rng = deck.rng
    name = rng.choice(SPECIAL_IDS)
    built = _build_special(name, deck, rules.quad_counts_as_two_pairs)
    if built is None:
        return None
    cards, split = built

    def held(special: str) -> bool:
        return oracle.qualifies(special, cards, rules.quad_counts_as_two_pairs)

    # Lazily, since a split search is slow: the built special, another one held, or `any`.
    roll = rng.random()
    others = [s for s in rng.sample(SPECIAL_IDS, len(SPECIAL_IDS)) if s != name]
    candidates = ([name] if roll < 0.85 else []) + others
    declared = next((s for s in candidates if held(s)), None)
    if declared is None:
        return None
    if roll < 0.35:
        declared = "any"
    entry: dict[str, Any] = {"special": declared}
    if rng.random() < 0.3:
        if declared in oracle.SPLIT_SPECIALS and declared != name:
            found = oracle.find_split(declared, frozenset(cards))
            assert found is not None
            split = (list(found[0]), list(found[1]), list(found[2]))
        # Other piles than the built split: `any` must then skip that split pattern (R5.5).
        if split is None or (declared not in oracle.SPLIT_SPECIALS and rng.random() < 0.5):
            shuffled = rng.sample(cards, 13)
            split = (shuffled[:3], shuffled[3:8], shuffled[8:])
        piles = (tuple(split[0]), tuple(split[1]), tuple(split[2]))
        try:
            oracle.resolve_special(
                declared, frozenset(cards), piles, rules.quad_counts_as_two_pairs
            )
            entry.update(zip(oracle.POSITIONS, split, strict=True))
        except oracle.OracleError:  # nothing the given piles show: declare with cards instead
            entry["cards"] = rng.sample(cards, 13)
    else:
        entry["cards"] = rng.sample(cards, 13)
    deck.take(cards)
    return entry


# ---------------------------------------------------------------------------------------------
# Rounds


def render(card: Card, rng: random.Random, fancy: bool) -> str:
    """R1.2 input forms: mostly `As`, sometimes `10`, other case, or suit symbols."""
    text = oracle.card_text(card)
    if not fancy or rng.random() < 0.6:
        return text
    rank = "10" if card[0] == 10 and rng.random() < 0.6 else text[0]
    rank = rank.lower() if rng.random() < 0.5 else rank
    suit = SUIT_SYMBOL[card[1]] if rng.random() < 0.5 else text[1]
    suit = suit.upper() if rng.random() < 0.3 else suit
    return rank + suit


def random_ruleset(rng: random.Random) -> str | dict[str, Any] | None:
    """Omitted, a preset, or an object overriding a preset's parameters (R13)."""
    roll = rng.random()
    if roll < 0.25:
        return None
    if roll < 0.4:
        return "standard"
    if roll < 0.55:
        return "fujian"
    rules: dict[str, Any] = {}
    if rng.random() < 0.5:
        rules["preset"] = rng.choice(["standard", "fujian"])
    options: dict[str, Callable[[], Any]] = {
        "wheel": lambda: rng.choice(["second", "lowest"]),
        "scoop_multiplier": lambda: rng.randint(1, 4),
        "home_run_multiplier": lambda: rng.randint(1, 3),
        "home_run_min_players": lambda: rng.choice([2, 3, 4]),
        "foul_counts_for_home_run": lambda: rng.random() < 0.3,
        "pile_bonuses": lambda: random_pile_bonuses(rng),
        "special_points": lambda: {
            s: rng.randint(1, 60) for s in rng.sample(SPECIAL_IDS, rng.randint(1, 5))
        },
        "quad_counts_as_two_pairs": lambda: rng.random() < 0.7,
        "seat_minimum": lambda: rng.choice([48, 100]),
        "stake_policy": lambda: rng.choice(["by_balance", "fixed"]),
        "escape_penalty_multiple": lambda: rng.choice([10, 25]),
        "arrange_seconds": lambda: rng.choice([30, 60]),
    }
    chances = {
        "wheel": 0.4,
        "home_run_min_players": 0.45,
        "foul_counts_for_home_run": 0.35,
        "pile_bonuses": 0.3,
        "quad_counts_as_two_pairs": 0.3,
    }
    for name, make in options.items():
        if rng.random() < chances.get(name, 0.2):
            rules[name] = make()
    return rules


def random_pile_bonuses(rng: random.Random) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for position in oracle.POSITIONS:
        if rng.random() < 0.75:
            categories = FRONT_CATEGORIES if position == "front" else CATEGORIES
            chosen = rng.sample(categories, rng.randint(0, min(4, len(categories))))
            table[position] = {category: rng.randint(1, 10) for category in chosen}
    return table


PLAYER_KINDS = ("random", "built", "strong", "twin", "r3_edge", "wheel_edge", "special")
SCENARIOS = {
    # name: (weight, player-kind weights in PLAYER_KINDS order)
    "mixed": (5, (2, 5, 0.5, 2, 1, 1, 1)),
    "home_run": (2, (1, 5, 0, 0.5, 0.5, 0.5, 0.3)),
    "specials": (2, (1, 2, 0, 0, 0, 0, 4)),
    "ties": (1, (0.5, 2, 0, 5, 0, 1, 0.5)),
    "edges": (1, (1, 1, 0, 1, 3, 3, 0)),
}


def random_round(rng: random.Random) -> dict[str, Any]:
    """One input object for ``thirteen score`` (always valid input)."""
    ruleset = random_ruleset(rng)
    rules = oracle.parse_ruleset(ruleset)
    count = rng.choice([2, 3, 3, 4, 4, 4])
    scenario = rng.choices(list(SCENARIOS), [w for w, _ in SCENARIOS.values()])[0]
    kind_weights = SCENARIOS[scenario][1]
    deck = Deck(rng)
    entries: list[dict[str, Any]] = []
    kinds = rng.choices(PLAYER_KINDS, kind_weights, k=count)
    if scenario == "home_run":
        kinds[0] = "strong"
    # Specials first: they need particular cards (a whole suit, every royal …).
    kinds.sort(key=lambda k: k != "special")
    while len(entries) < count:
        kind = kinds[len(entries)]
        special = special_player(deck, rules) if kind == "special" else None
        if special is not None:
            entries.append(special)
            continue
        pair_fits = kind == "twin" and len(entries) + 2 <= count
        twins = twin_piles(deck, rules.wheel) if pair_fits else None
        if twins is not None:
            piles_list = list(twins)
        elif kind == "random":
            piles_list = [random_piles(deck)]
        elif kind == "r3_edge":
            piles_list = [r3_edge_piles(deck, rules.wheel)]
        elif kind == "wheel_edge":
            piles_list = [wheel_edge_piles(deck)]
        else:
            piles_list = [built_piles(deck, rules.wheel, strong=kind == "strong")]
        entries += [dict(zip(oracle.POSITIONS, piles, strict=True)) for piles in piles_list]
    rng.shuffle(entries)

    fancy = rng.random() < 0.15
    players = []
    for seat, entry in enumerate(entries):
        player: dict[str, Any] = {"id": rng.choice(["P", "seat", "玩家", ""]) + str(seat)}
        for key, value in entry.items():
            player[key] = [render(c, rng, fancy) for c in value] if key != "special" else value
        players.append(player)
    round_: dict[str, Any] = {}
    if ruleset is not None:
        round_["ruleset"] = ruleset
    money = rng.random()
    if money > 0.3:
        round_["base"] = rng.choice([0, 1, 1, 2, 3, 10, 10, 100])
    if money > 0.45:
        everyone = money > 0.55
        for player in players:
            if everyone or rng.random() < 0.5:
                player["balance"] = rng.choice(
                    [0, 1, 5, 7, 13, 30, 45, 50, 99, 480, 5000, 10**6, rng.randint(0, 300)]
                )
    round_["players"] = players
    return round_


def rounds(seed: int, count: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    return [random_round(rng) for _ in range(count)]


def round_lines(seed: int, count: int) -> list[str]:
    return [json.dumps(round_, ensure_ascii=False) for round_ in rounds(seed, count)]


# ---------------------------------------------------------------------------------------------
# Invalid lines, suggest lines, deal arguments


def _mutations(rng: random.Random, round_: dict[str, Any]) -> list[tuple[str, Any]]:
    """(reason, mutated round) for each kind of bad input the CLI must answer with an error."""
    players = round_["players"]
    normal = [p for p in players if "front" in p and "special" not in p]

    def clone() -> dict[str, Any]:
        copy: dict[str, Any] = json.loads(json.dumps(round_))
        return copy

    out: list[tuple[str, Any]] = []
    bad = clone()
    bad["players"][0]["front" if "front" in bad["players"][0] else "cards"][0] = rng.choice(
        ["1s", "Xh", "A", "Az", "11c", "", "AsK", "T"]
    )
    out.append(("unknown card", bad))
    bad = clone()
    hand = bad["players"][0]
    pile = "middle" if "middle" in hand else "cards"
    hand[pile][1] = oracle.card_text(oracle.parse_card(hand[pile][0])).lower()
    out.append(("a card twice in a hand", bad))
    bad = clone()
    other = bad["players"][1]
    bad["players"][0]["front" if "front" in bad["players"][0] else "cards"][0] = (
        other["back"] if "back" in other else other["cards"]
    )[-1]
    out.append(("a card twice across players", bad))
    if normal:
        bad = clone()
        victim = bad["players"][players.index(normal[0])]
        victim["front"].append(victim["middle"].pop())
        out.append(("wrong pile sizes", bad))
        bad = clone()
        bad["players"][players.index(normal[0])]["back"].pop()
        out.append(("wrong pile sizes", bad))
        bad = clone()
        bad["players"][players.index(normal[0])]["special"] = rng.choice(
            ["seven_pairs", "DRAGON", "royal_flush"]
        )
        out.append(("unknown special", bad))
        bad = clone()
        bad["players"][players.index(normal[0])]["special"] = rng.choice(
            ["dragon", "supreme_dragon", "three_quads", "twelve_royals", "any"]
        )
        out.append(("a declared special the cards do not hold", bad))
    bad = clone()
    bad["ruleset"] = rng.choice(["texas", "Standard", "", 7])
    out.append(("unknown ruleset", bad))
    bad = clone()
    bad["ruleset"] = {rng.choice(["jokers", "wheels", "scoop", "preset_name"]): 1}
    out.append(("unknown ruleset parameter", bad))
    bad = clone()
    bad["ruleset"] = {"preset": "texas"}
    out.append(("unknown preset", bad))
    bad = clone()
    bad["players"] = bad["players"][:1]
    out.append(("fewer than 2 players", bad))
    bad = clone()
    bad["players"] = []
    out.append(("no players", bad))
    bad = clone()
    bad["players"][-1]["id"] = bad["players"][0]["id"]
    out.append(("duplicate player ids", bad))
    bad = clone()
    bad["base"] = -rng.randint(1, 10)
    out.append(("negative base", bad))
    bad = clone()
    bad["base"] = 10
    bad["players"][0]["balance"] = -1
    out.append(("negative balance", bad))
    return out


def invalid_lines(seed: int, count: int) -> list[tuple[str, str]]:
    """(reason, line): every line is one the oracle rejects."""
    rng = random.Random(seed)
    out: list[tuple[str, str]] = [
        ("malformed JSON", '{"players": ['),
        ("malformed JSON", "not json"),
        ("malformed JSON", '{"players": [}'),
        ("five players", _five_players(rng)),
        *_wrong_splits(rng),
    ]
    while len(out) < count:
        round_ = random_round(rng)
        for reason, bad in _mutations(rng, round_):
            line = json.dumps(bad, ensure_ascii=False)
            if "error" in oracle.score_line(line):
                out.append((reason, line))
    return rng.sample(out[:count], count)


def _five_players(rng: random.Random) -> str:
    deck = Deck(rng)
    players = []
    for seat in range(5):
        piles = random_piles(deck) if len(deck.left) >= 13 else random_piles(Deck(rng))
        players.append(
            {
                "id": f"P{seat}",
                **{
                    pos: [oracle.card_text(c) for c in pile]
                    for pos, pile in zip(oracle.POSITIONS, piles, strict=True)
                },
            }
        )
    return json.dumps({"players": players})


def _wrong_splits(rng: random.Random) -> list[tuple[str, str]]:
    """Cards that hold three_flushes (and nothing else) with piles that do not show it (R5.5)."""
    piles = [pile.split() for pile in "2s 5s 3h | 9s 6h 8h Jh Kh | 4d 7d Td Qd 2d".split("|")]
    cards = [oracle.parse_card(card) for pile in piles for card in pile]
    assert oracle.qualifying_specials(cards) == ["three_flushes"]
    other = [f"{rank}c" for rank in oracle.RANKS]
    rng.shuffle(other)
    opponent = {"id": "B", "front": other[:3], "middle": other[3:8], "back": other[8:]}
    return [
        (
            f"{declared} with piles that do not show the split pattern the cards hold",
            json.dumps(
                {
                    "players": [
                        {
                            "id": "A",
                            "special": declared,
                            **dict(zip(oracle.POSITIONS, piles, strict=True)),
                        },
                        opponent,
                    ]
                }
            ),
        )
        for declared in ("three_flushes", "any")
    ]


def suggest_lines(seed: int, count: int) -> list[dict[str, Any]]:
    """Input objects for ``thirteen suggest``: random hands and hands built to hold specials."""
    rng = random.Random(seed)
    out = []
    for index in range(count):
        ruleset = rng.choice(
            [
                None,
                "standard",
                "fujian",
                {"quad_counts_as_two_pairs": True},
                {"wheel": "lowest"},
                {"preset": "fujian", "wheel": "lowest", "quad_counts_as_two_pairs": True},
            ]
        )
        rules = oracle.parse_ruleset(ruleset)
        deck = Deck(rng)
        cards: list[Card] | None = None
        if index % 2:
            built = _build_special(
                SPECIAL_IDS[index // 2 % len(SPECIAL_IDS)], deck, rules.quad_counts_as_two_pairs
            )
            cards = built[0] if built else None
        if cards is None:
            cards = deck.sample(13)
        assert cards is not None
        line: dict[str, Any] = {
            "cards": [render(c, rng, index % 5 == 0) for c in rng.sample(cards, 13)]
        }
        if ruleset is not None:
            line["ruleset"] = ruleset
        out.append(line)
    return out


def deal_arguments(seed: int, count: int) -> list[tuple[str, str, str, int]]:
    """(server seed hex, client seed, round id, players) for ``thirteen deal``."""
    rng = random.Random(seed)
    client_seeds = ["", "client", "客户端 seed", "a:b:c", "x" * 100, str(rng.random())]
    return [
        (
            rng.randbytes(32).hex(),
            rng.choice(client_seeds),
            rng.choice(["r1", "round-2", str(rng.randint(0, 10**9)), "ラウンド"]),
            rng.randint(2, 4),
        )
        for _ in range(count)
    ]
