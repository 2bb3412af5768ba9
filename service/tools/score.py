"""The JSON shapes of ``thirteen score`` and ``thirteen suggest`` (a public contract).

Input is validated here, before the domain is asked anything, so every message names the player
and the card or field at fault. A ruleset's variants (R14) apply: up to ``max_players`` players,
and with extra suits a card as often as the deck holds it (R14.2.3).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from domain.errors import RuleError
from domain.rules.arrangement import PILE_NAMES, Arrangement
from domain.rules.cards import Card, format_cards, parse_card
from domain.rules.play import Play, declare
from domain.rules.ruleset import Ruleset, resolve
from domain.rules.scoring import RoundScore, Seat, score_round
from domain.rules.settlement import gross, settle
from domain.rules.specials import Split
from domain.rules.suggest import Suggestion, suggest

_ROUND_KEYS = {"ruleset", "base", "players"}
_PLAYER_KEYS = {"id", "front", "middle", "back", "special", "cards", "balance"}


class InputError(RuleError):
    """Input that is not a well-formed round."""


@dataclass(frozen=True)
class _Player:
    player_id: str
    play: Play
    balance: int | None
    cards: tuple[Card, ...]


class _Seen:
    """Who holds each card given so far, against how many copies the deck has (R14.2.3)."""

    def __init__(self, copies: Mapping[Card, int]) -> None:
        self.copies = copies
        self.owners: dict[Card, list[str]] = {}

    def add(self, card: Card, who: str) -> None:
        owners = self.owners.setdefault(card, [])
        allowed = self.copies.get(card, 1)
        if len(owners) >= allowed:
            if allowed > 1:
                raise InputError(
                    f"{who}: card {card} is given {len(owners) + 1} times; the deck holds "
                    f"{allowed} (R14.2.3)"
                )
            owner = owners[0]
            where = "appears twice in their hand" if owner == who else f"is also in {owner}'s hand"
            raise InputError(f"{who}: card {card} {where}")
        owners.append(who)


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise InputError(f"{what} must be a JSON object")
    return value


def _unknown_keys(data: Mapping[str, Any], known: set[str], where: str) -> None:
    unknown = sorted(set(data) - known)
    if unknown:
        expected = ", ".join(sorted(known))
        raise InputError(f"{where}unknown field {unknown[0]!r}; expected {expected}")


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InputError(f"{what} must be a whole number >= 0, got {json_text(value)}")
    return value


def json_text(value: Any) -> str:
    import json

    return json.dumps(value, ensure_ascii=False)


def _cards(value: Any, who: str, what: str, seen: _Seen) -> tuple[Card, ...]:
    if not isinstance(value, list):
        raise InputError(f"{who}: {what} must be a list of cards")
    cards = []
    for text in value:
        try:
            card = parse_card(text)
        except RuleError as error:
            raise InputError(f"{who}: {error.message}") from None
        seen.add(card, who)
        cards.append(card)
    return tuple(cards)


def _player(data: Any, index: int, ruleset: Ruleset, seen: _Seen) -> _Player:
    data = _mapping(data, f"player {index + 1}")
    player_id = data.get("id")
    if not isinstance(player_id, str) or not player_id:
        raise InputError(f"player {index + 1}: 'id' must be a non-empty string")
    who = f"player {player_id}"
    _unknown_keys(data, _PLAYER_KEYS, f"{who}: ")
    balance = _count(data["balance"], f"{who}: balance") if "balance" in data else None
    has_piles = any(p in data for p in PILE_NAMES)
    if "special" in data:
        declared = data["special"]
        if not isinstance(declared, str):
            raise InputError(f"{who}: special must be a special id or 'any'")
        if "cards" in data and has_piles:
            raise InputError(f"{who}: give either cards or front/middle/back, not both")
        if "cards" in data:
            cards = _cards(data["cards"], who, "cards", seen)
            if len(cards) != 13:
                raise InputError(f"{who}: a special hand needs 13 cards, got {len(cards)}")
            split = None
        else:
            arrangement = _arrangement(data, who, seen)
            cards, split = arrangement.cards, Split(*arrangement.piles)
        try:
            return _Player(player_id, declare(cards, declared, ruleset, split), balance, cards)
        except RuleError as error:
            raise InputError(f"{who}: {error.message}") from None
    if "cards" in data:
        raise InputError(
            f"{who}: 'cards' goes with a 'special'; arrange the hand into "
            "front, middle and back instead"
        )
    arrangement = _arrangement(data, who, seen)
    return _Player(player_id, Play(arrangement), balance, arrangement.cards)


def _arrangement(data: Mapping[str, Any], who: str, seen: _Seen) -> Arrangement:
    missing = [p for p in PILE_NAMES if p not in data]
    if missing:
        raise InputError(f"{who}: missing {', '.join(missing)} (or give a special)")
    piles = [_cards(data[p], who, p, seen) for p in PILE_NAMES]
    try:
        # the player's cards are what they place: ``seen`` held them to the deck (R14.2.3)
        return Arrangement.of(*piles, dealt=[c for pile in piles for c in pile])
    except RuleError as error:
        raise InputError(f"{who}: {error.message}") from None


def _ruleset(data: Mapping[str, Any]) -> Ruleset:
    return resolve(data.get("ruleset"))


def score_line(data: Any) -> dict[str, Any]:
    """One round in, one result out (the ``thirteen score`` contract)."""
    data = _mapping(data, "a round")
    _unknown_keys(data, _ROUND_KEYS, "")
    ruleset = _ruleset(data)
    base = _count(data["base"], "base") if "base" in data else None
    players_data = data.get("players")
    most = ruleset.max_players  # R10.1, R14.2.1
    if not isinstance(players_data, list) or not 2 <= len(players_data) <= most:
        count = len(players_data) if isinstance(players_data, list) else "no"
        raise InputError(f"a round needs 2 to {most} players, got {count}")
    seen = _Seen(ruleset.copies)
    players: list[_Player] = []
    ids = [p.get("id") if isinstance(p, Mapping) else None for p in players_data]
    for player_id in ids:
        if player_id is not None and ids.count(player_id) > 1:
            raise InputError(f"player id {json_text(player_id)} appears twice")
    for index, entry in enumerate(players_data):
        players.append(_player(entry, index, ruleset, seen))
    score = score_round([Seat(p.player_id, p.play, p.cards) for p in players], ruleset)
    return format_score(score, base, [p.balance for p in players])


def format_score(
    score: RoundScore, base: int | None, balances: Sequence[int | None]
) -> dict[str, Any]:
    coins: list[int] | None = None
    if base is not None:
        coins = gross(score.points, base)
        known = [b for b in balances if b is not None]
        if len(known) == len(balances):
            coins = settle(coins, known)
    players = []
    for k, p in enumerate(score.players):
        entry: dict[str, Any] = {"id": p.player_id, "points": p.points}
        if coins is not None:
            entry["coins"] = coins[k]
        entry["foul"] = p.foul
        entry["special"] = p.special.id if p.special else None
        players.append(entry)
    pairs = [
        {
            "a": q.a,
            "b": q.b,
            "points": q.points,
            "piles": list(q.piles),
            "scoop": q.scoop,
            "home_run": q.home_run,
            "explanation": q.explanation,
        }
        for q in score.pairs
    ]
    return {"players": players, "pairs": pairs}


def suggest_line(data: Any) -> dict[str, Any]:
    """``{"cards": [13], "ruleset": ...}`` → the qualifying specials and an arrangement."""
    data = _mapping(data, "a hand")
    _unknown_keys(data, {"cards", "ruleset"}, "")
    ruleset = _ruleset(data)
    cards = _cards(data.get("cards"), "hand", "cards", _Seen(ruleset.copies))
    if len(cards) != 13:
        raise InputError(f"hand: needs 13 cards, got {len(cards)}")
    return format_suggestion(suggest(cards, ruleset))


def format_suggestion(suggestion: Suggestion) -> dict[str, Any]:
    a = suggestion.arrangement
    return {
        "specials": [q.special.id for q in suggestion.specials],
        "arrangement": {
            name: format_cards(pile) for name, pile in zip(PILE_NAMES, a.piles, strict=True)
        },
    }
