"""What a deal records (R8.3, R8.4, R10.1, R12, R14.2.4): the hands from the committed seed, the
client seed and the players' seeds, the base stake and every balance fixed, the deadline set;
refused while anything it would record exceeds ``domain.rules.limits``.
``Round(**deal_record(...))`` records it in its ``Dealt`` event; ``undealt_cards`` recomputes what
it left undealt once the seed is revealed."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from domain.errors import RuleError
from domain.fairness.shuffle import (
    check_player_seeds,
    commitment,
    deal,
    effective_client_seed,
    in_seat_order,
    undealt,
)
from domain.round import Round
from domain.rules.cards import Card, format_cards
from domain.rules.limits import check_deal
from domain.rules.ruleset import Ruleset
from domain.rules.stakes import round_base


def deal_record(
    *,
    round_id: str,
    table_id: str,
    number: int,
    balances: dict[str, int],
    server_seed: bytes,
    client_seed: str,
    ruleset: Ruleset,
    at: datetime,
    player_seeds: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """R10.1, R12: deal 13 cards to each seated player from the committed seed, the client
    seed and the players' seeds (R12.8: only from players dealt in), from the ruleset's deck of
    N cards to at most its ``max_players`` (R14.2.1, R14.2.4); R8.3, R8.4: fix the
    base stake and every balance. Refused while anything it would record exceeds
    ``domain.rules.limits``."""
    check_deal(table_id, number, balances, ruleset)
    players = list(balances)
    seeds = check_player_seeds(player_seeds or {}, players)
    mixed = effective_client_seed(client_seed, in_seat_order(players, seeds))
    if len(players) > ruleset.max_players:  # R10.1, R14.2.1
        raise RuleError(
            f"cannot deal to {len(players)} players: the ruleset's max_players is "
            f"{ruleset.max_players} (R14.2.1)",
            field="players",
        )
    hands = deal(
        server_seed,
        mixed,
        round_id,
        len(players),
        deck=ruleset.deck,
        max_players=ruleset.max_players,
    )
    base = round_base(balances, ruleset)
    return dict(
        round_id=round_id,
        table_id=table_id,
        number=number,
        players=players,
        hands={p: format_cards(h) for p, h in zip(players, hands, strict=True)},
        commitment=commitment(server_seed),
        client_seed=client_seed,
        player_seeds=seeds,
        base_stake=base,
        balances=dict(balances),
        ruleset=ruleset.to_dict(),
        at=at,
        deadline=at + timedelta(seconds=ruleset.arrange_seconds),
    )


def dealt_round(record: dict[str, Any], ruleset: Ruleset) -> Round:
    """``Round(**record)`` for ``record = deal_record(..., ruleset=ruleset)``, holding that
    ruleset rather than parsing it back from what the deal recorded of it (the same ruleset:
    ``Ruleset.from_dict(ruleset.to_dict()) == ruleset``)."""
    round_ = Round(**record)
    round_.__dict__["ruleset"] = ruleset  # what ``Round.ruleset`` caches
    return round_


def undealt_cards(round_: Round) -> tuple[Card, ...]:
    """R14.2.4: the shuffled deck's positions from 13 × (players dealt) on, which no one was
    dealt, recomputed from the round's revealed server seed and what its deal recorded (the
    client seed, the players' seeds, the ruleset's deck), so nothing more is stored. A ruleset
    of R13 alone (``standard``, ``fujian``: R14's defaults leave R1–R13 as they are) publishes
    none, as R12 never did. Only a round that is over has its seed (R12.6); who may see them
    is ``domain.visibility``'s to say."""
    if round_.server_seed is None:
        raise RuleError(f"round {round_.round_id} is not over: its server seed is secret (R12.1)")
    rules = round_.ruleset
    if not rules.variants():
        return ()
    return undealt(
        bytes.fromhex(round_.server_seed),
        effective_client_seed(round_.client_seed, round_.seat_seeds),
        round_.round_id,
        len(round_.players),
        deck=rules.deck,
        max_players=rules.max_players,
    )
