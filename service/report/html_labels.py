"""The HTML report's labels: English by key (``ENGLISH_LABELS``), or a reader's own
(``Labels``), and how a label and any text from the record go into a page, escaped.
"""

from __future__ import annotations

from html import escape
from typing import Protocol

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
        return words


ENGLISH = English()


def e(text: object) -> str:
    """Text from the record (player ids are user input) as HTML."""
    return escape(str(text), quote=True)


def say(labels: Labels, key: str, **values: object) -> str:
    """A label as HTML: its values escaped, its words as they are (they hold no markup)."""
    return labels(key, **{name: e(value) for name, value in values.items()})
