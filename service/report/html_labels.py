"""The HTML report's labels: English by key (``ENGLISH_LABELS``), or a reader's own
(``Labels``), and how a label and any text from the record go into a page, escaped.
"""

from __future__ import annotations

from html import escape
from typing import Protocol

from domain.rules.hands import Category

ENGLISH_LABELS: dict[str, str] = {
    # a player's box
    "escaped_badge": "escaped",
    "foul_badge": "FOUL",
    "n_points": "{n} pts",
    "n_coins": "{n} coins",
    "seat_at_deal": "seat {seat} · {coins} coins at the deal",
    "hand_label": "hand",
    "hidden": "cards hidden until the round is over",
    "dealt_label": "dealt",
    "special_hand": "special hand {id} ({chinese}), {points} points, declared {declared}",
    "foul_reason": "foul: {reason}",
    "escaped_reason": "left between the deal and the showdown (R11)",
    "players_heading": "Players",
    "players_heading_over": "Players — front | middle | back",
    # the comparisons
    "comparisons": "Comparisons (R6)",
    "even": "even",
    "vs": "{a} vs {b}",
    "pile": "pile",
    "for_a": "for {a}",
    # the coins
    "coins_heading": "Coins (R7, R9)",
    "coins_how": "gross = points × base {base}; settled against the balances at the deal: a "
    "loser pays at most what they had (R9.1).",
    "col_player": "player",
    "col_points": "points",
    "col_gross": "gross",
    "col_at_deal": "at the deal",
    "col_settled": "settled",
    "col_escape": "escape",
    "col_after": "after",
    # the fairness proof
    "proof": "Fairness proof (R12)",
    "commitment": "commitment published before the deal",
    "client_seed": "client seed, round id",
    "player_seeds": "player seeds, each from the player's device (R12.8)",
    "effective_seed": "client seed the deal used: the client seed with the player seeds mixed "
    "in (R12.8)",
    "server_seed": "server seed",
    "server_seed_revealed": "server seed revealed",
    "not_revealed": "not revealed yet: it is published when the round ends (R12.6)",
    "seed_matches": "SHA-256(server seed) equals the commitment",
    "deal_matches": "the deal recomputed from the seeds equals the recorded hands",
    "deal_matches_seeds": "the deal recomputed from the seeds and the player seeds equals the "
    "recorded hands",
    "verified": "verified",
    "not_verified": "NO",
    "callers": "Who called",
    # R14: the horse card, the cards dealt to no one, many pairs
    "horse_badge": "horse",
    "horse_holder": "holds the horse card 马牌 {card}: each of their pairs ×{factor} (R14.1)",
    "horse_card_title": "{card}, the horse card 马牌 (R14.1)",
    "undealt": "Undealt cards (R14.2.4)",
    "undealt_how": "{n} cards of the {deck}-card deck were dealt to no one; they are published "
    "with the hands.",
    "glance": "Pairs at a glance: points for the row’s player (R6, R14.2.6)",
}
"""The report's labels in English, by key. A label is plain words, never markup: its values
are escaped before they go in, and the label itself is not (``player's`` stays as written)."""


class Labels(Protocol):
    """How the report words its labels: ``labels(key, **values)`` for a key of
    ``ENGLISH_LABELS``, and a pile's name and a pile's recorded words (``flush, A-high``) as
    the reader reads them. The console's ``service.web.labels.Words`` is one, in two
    languages."""

    def __call__(self, key: str, /, **values: object) -> str: ...

    def pile(self, name: str) -> str: ...

    def hand_words(self, words: str) -> str: ...


class English:
    """The report's own labels (``ENGLISH_LABELS``); names and words as recorded."""

    def __call__(self, key: str, /, **values: object) -> str:
        return ENGLISH_LABELS[key].format(**values)

    def pile(self, name: str) -> str:
        return name

    def hand_words(self, words: str) -> str:
        return pile_words(words)


ENGLISH = English()


CATEGORIES_ZH = {
    Category.FIVE_OF_A_KIND: "五同",
    Category.STRAIGHT_FLUSH: "同花顺",
    Category.FOUR_OF_A_KIND: "铁支",
    Category.FULL_HOUSE: "葫芦",
    Category.FLUSH: "同花",
    Category.STRAIGHT: "顺子",
    Category.THREE_OF_A_KIND: "三条",
    Category.TWO_PAIR: "二对",
    Category.PAIR: "一对",
    Category.HIGH_CARD: "散牌",
}
"""R2.1, R14.3.1: each pile category's Chinese name."""

CATEGORY_OF_WORDS = {c.words: c for c in Category}


def pile_words(words: str) -> str:
    """A pile's recorded words (``five of a kind, 4s``), the Chinese name of R14's new
    category beside its English (``five of a kind 五同, 4s``); any other as recorded.

    >>> pile_words("five of a kind, 4s"), pile_words("pair, Qs")
    ('five of a kind 五同, 4s', 'pair, Qs')
    """
    head, comma, rest = words.partition(",")
    if CATEGORY_OF_WORDS.get(head) is Category.FIVE_OF_A_KIND:
        return f"{head} {CATEGORIES_ZH[Category.FIVE_OF_A_KIND]}{comma}{rest}"
    return words


def e(text: object) -> str:
    """Text from the record (player ids are user input) as HTML."""
    return escape(str(text), quote=True)


def say(labels: Labels, key: str, **values: object) -> str:
    """A label as HTML: its values escaped, its words as they are (they hold no markup)."""
    return labels(key, **{name: e(value) for name, value in values.items()})
