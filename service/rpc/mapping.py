"""Translations between protobuf messages and the domain, in one module.

What a viewer may see of a round before it is over is ``domain.visibility``'s to say.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from google.protobuf.timestamp_pb2 import Timestamp

from domain import visibility
from domain.dealing import undealt_cards
from domain.errors import CardError, RuleError, quoted
from domain.results import RoundResult, round_result
from domain.round import Round
from domain.rules.cards import Card, format_cards, parse_card
from domain.rules.ruleset import Ruleset, resolve
from domain.rules.specials import Counting, Special, qualifying
from domain.table import Table
from projections.listing import Listing
from service._generated.thirteen.v1 import table_pb2 as pb
from service.application import MAX_ID_LENGTH

_SCALARS = (
    "wheel",
    "scoop_multiplier",
    "home_run_multiplier",
    "home_run_min_players",
    "foul_counts_for_home_run",
    "quad_counts_as_two_pairs",
    "seat_minimum",
    "stake_policy",
    "base_stake",
    "escape_penalty_multiple",
    "arrange_seconds",
)


def timestamp(moment: datetime) -> Timestamp:
    stamp = Timestamp()
    stamp.FromDatetime(moment)
    return stamp


def moment(stamp: Timestamp, field: str) -> datetime:
    """A request's timestamp as an aware datetime; one a datetime cannot hold (before year 1,
    after 9999, nanos outside 0–999,999,999) is malformed input."""
    try:
        return stamp.ToDatetime(tzinfo=UTC)
    except (ValueError, OverflowError):
        raise RuleError(
            f"{field} must be a time from 0001-01-01 to 9999-12-31 UTC with nanos from 0 to "
            f"999,999,999; got seconds={stamp.seconds}, nanos={stamp.nanos}",
            field=field,
        ) from None


def cards(texts: Sequence[str], field: str) -> list[Card]:
    """R1.2 card strings of one request field; the error names the field and the card (the
    first characters of it: a card is a few characters, a request may hold kilobytes)."""
    parsed = []
    for index, text in enumerate(texts):
        try:
            parsed.append(parse_card(text))
        except CardError as error:
            message = error.message.replace(repr(text), quoted(text), 1)
            raise CardError(f"{field}[{index}]: {message}", field=field) from None
    return parsed


def viewer(text: str) -> str:
    """A request's viewer: empty (an observer) or a player id, so printable and at most
    ``MAX_ID_LENGTH`` characters (as ``service.application.check_id`` holds ids)."""
    if text and (len(text) > MAX_ID_LENGTH or not text.isprintable()):
        raise RuleError(
            f"viewer must be empty or a player id of at most {MAX_ID_LENGTH} printable "
            f"characters, got {quoted(text)}",
            field="viewer",
        )
    return text


_VARIANT_SCALARS = (
    "horse_card",
    "horse_multiplier",
    "horse_both_holders",
    "max_players",
    "extra_suits",
    "group_kickers",
    "flush_pairs_first",
    "special_counting",
    "roll_over_counts_as_scoop",
    "scoop_bonus",
    "special_order",
)
"""R14's parameters that are one value on the wire (``extra_suits`` as a string, "dc")."""


def ruleset(name: str, parameters: pb.RulesetParameters | None) -> Ruleset:
    """R13, R14: a preset by name (default standard) with the set parameters overriding it,
    for a new table, so within ``domain.rules.limits`` (table.proto states them)."""
    spec: dict[str, Any] = {"preset": name or "standard"}
    if parameters is not None:
        for field in (*_SCALARS, *_VARIANT_SCALARS):
            if parameters.HasField(field):
                spec[field] = getattr(parameters, field)
        if parameters.HasField("pile_bonuses"):
            bonuses = parameters.pile_bonuses
            spec["pile_bonuses"] = {
                pile: dict(getattr(bonuses, pile)) for pile in ("front", "middle", "back")
            }
        points: dict[str, int | None] = dict(parameters.special_points)
        points |= dict.fromkeys(parameters.undeclarable_specials)  # R14.5.4: null takes it out
        if points:
            spec["special_points"] = points
        if parameters.HasField("extra_specials"):
            spec["extra_specials"] = list(parameters.extra_specials.ids)
    return resolve(spec, strict=True)


def ruleset_parameters(rules: Ruleset) -> pb.RulesetParameters:
    """Every R13 parameter, and the R14 ones the ruleset changes from their defaults (as it
    records them), so a table opened before R14 answers as it did."""
    data = rules.to_dict()
    variants = rules.variants()
    points = data["special_points"]
    message = pb.RulesetParameters(
        **{field: data[field] for field in _SCALARS},
        pile_bonuses=pb.PileBonuses(**data["pile_bonuses"]),
        special_points={k: v for k, v in points.items() if v is not None},
        undeclarable_specials=[k for k, v in points.items() if v is None],
    )
    for field in _VARIANT_SCALARS:
        if field in variants:
            value = variants[field]
            setattr(message, field, "".join(value) if field == "extra_suits" else value)
    if "extra_specials" in variants:
        message.extra_specials.ids.extend(variants["extra_specials"])
    return message


def table_fields(table: Table) -> dict[str, Any]:
    """The fields of ``Table``, also those of the responses that return a table."""
    rules = table.ruleset
    return {
        "table_id": table.table_id,
        "ruleset": rules.name,
        "ruleset_parameters": ruleset_parameters(rules),
        "seats": [pb.Seat(player_id=p, seat=i) for i, p in enumerate(table.seats)],
        "next_commitment": table.next_commitment,
        "current_round_id": table.current_round or "",
        "round_count": len(table.round_ids),
        "opened_at": timestamp(table.opened_at),
    }


_PHASES = {
    "dealt": pb.ROUND_PHASE_DEALT,
    "revealed": pb.ROUND_PHASE_REVEALED,
    "abandoned": pb.ROUND_PHASE_ABANDONED,
}
"""``Round.phase`` on the wire."""


def _hand(round_: Round, player: str, viewer: str | None) -> pb.Hand:
    hand = pb.Hand(player_id=player, cards=round_.hands[player])
    if visibility.shows_qualifying(round_, viewer, player):  # R5.6
        rules = round_.ruleset
        found = _qualifying_ids(
            round_.hand(player),
            rules.quad_counts_as_two_pairs,
            rules.special_counting,
            rules.specials,
        )
        if rules.special_order == "points":  # R14.5.3: strongest first, as R5.4's any takes
            found = tuple(sorted(found, key=lambda i: -rules.points_of(Special.from_id(i))))
        hand.qualifying_specials.extend(found)
    return hand


@functools.lru_cache(maxsize=4096)
def _qualifying_ids(
    cards: tuple[Card, ...],
    quad_counts_as_two_pairs: bool,
    special_counting: str,
    specials: tuple[Special, ...],
) -> tuple[str, ...]:
    """R5.6 for a dealt hand, which never changes: computed once per hand, not per message
    (a few milliseconds each; every watch message and GetRound of an open round asks). Under
    the table's ruleset: its counting (R14.4.1) and the specials it lets a player declare
    (R14.4.3, R14.5.4), as R5.4 judges a declaration."""
    counting = Counting(quad_counts_as_two_pairs, special_counting)
    found = qualifying(cards, counting=counting, specials=specials)
    return tuple(q.special.id for q in found)


def round_fields(round_: Round, viewer: str | None) -> dict[str, Any]:
    """The fields of ``Round`` as ``viewer`` may see them (``visibility.DEALER``: every
    hand); a revealed round's result is the one its reveal recorded."""
    fields: dict[str, Any] = {
        "round_id": round_.round_id,
        "table_id": round_.table_id,
        "number": round_.number,
        "commitment": round_.commitment,
        "client_seed": round_.client_seed,
        "base_stake": round_.base_stake,
        "dealt_at": timestamp(round_.dealt_at),
        "deadline": timestamp(round_.deadline),
        "hands": [_hand(round_, p, viewer) for p in visibility.visible_hands(round_, viewer)],
        "phase": _PHASES[round_.phase],
        "players": [
            pb.RoundPlayer(
                player_id=p,
                seat=i,
                balance_at_deal=round_.balances[p],
                submitted=p in round_.submissions,
                escaped=p in round_.escaped,
                player_seed=round_.player_seeds.get(p, ""),  # R12.8
            )
            for i, p in enumerate(round_.players)
        ],
        "server_seed": round_.server_seed or "",
    }
    if round_.revealed:
        fields["result"] = pb.RoundResult(**result_fields(round_result(round_)))
    fields["undealt_cards"] = undealt(round_)
    return fields


def undealt(round_: Round) -> list[str]:
    """R14.2.4: the cards no one was dealt, once ``domain.visibility`` shows them (none before)."""
    if not visibility.shows_undealt(round_):
        return []
    return format_cards(undealt_cards(round_))


def listed_round(listing: Listing) -> pb.Round:
    """A round of the table listing (``projections.listing``): what ``round_fields`` shows an
    observer (``visibility.OBSERVER``), decided when the row was written. Its keys are the
    message's fields, so its lists of players, hands, player results and pairs are given to
    the message as they are, with no copy between."""
    result = listing["result"]
    return pb.Round(
        round_id=listing["round_id"],
        table_id=listing["table_id"],
        number=listing["number"],
        commitment=listing["commitment"],
        client_seed=listing["client_seed"],
        base_stake=listing["base_stake"],
        dealt_at=_stamp(listing["dealt_at"]),
        deadline=_stamp(listing["deadline"]),
        hands=listing["hands"],
        phase=_PHASES[listing["phase"]],
        players=listing["players"],
        server_seed=listing["server_seed"],
        result=None if result is None else _listed_result(result),
        undealt_cards=listing["undealt_cards"],
    )


def _listed_result(result: dict[str, Any]) -> pb.RoundResult:
    """``RoundResult.to_dict``'s data as the message ``result_fields`` makes of it."""
    message = pb.RoundResult(
        round_id=result["round_id"],
        server_seed=result["server_seed"],
        players=result["players"],
        pairs=result["pairs"],
        base_stake=result["base_stake"],
        table_id=result["table_id"],
    )
    if result["revealed_at"] is not None:
        message.revealed_at.CopyFrom(_stamp(result["revealed_at"]))
    return message


def _stamp(text: str) -> Timestamp:
    return timestamp(datetime.fromisoformat(text))


def result_fields(result: RoundResult) -> dict[str, Any]:
    """The fields of ``RoundResult`` (and of ``RevealResponse`` and ``GetRoundResultResponse``)."""
    fields: dict[str, Any] = {
        "round_id": result.round_id,
        "server_seed": result.server_seed,
        # Each result dataclass holds just its fields, named as the message's are (``asdict``
        # would copy deeply, and protobuf copies again).
        "players": [pb.PlayerResult(**vars(p)) for p in result.players],
        "pairs": [pb.PairResult(**vars(p)) for p in result.pairs],
        "base_stake": result.base_stake,
        "table_id": result.table_id,
    }
    if result.revealed_at is not None:
        fields["revealed_at"] = timestamp(result.revealed_at)
    return fields
