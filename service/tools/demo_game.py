"""One demo run (``Game``): the bots' wallets, the table they sit at and what they know; setting
it up and leaving it."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from domain.rules.ruleset import ALL_PRESETS, Ruleset
from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from service.rpc import mapping
from service.tools.demo_client import Api
from service.tools.demo_screen import Screen, plural

BOTS = ("alice", "bob", "carol", "dave", "erin", "frank")
"""As many as the ruleset seats (``max_players``: four, or five and six with R14's extra suits)."""
CREDIT = 1000  # a balance of 480–4,799 plays at base 10 (R8.2)


@dataclass
class Game:
    """One demo run: its table, its players and what the bots know."""

    api: Api
    screen: Screen
    rng: random.Random
    tag: str
    players: list[str] = field(default_factory=list)
    balances: dict[str, int] = field(default_factory=dict)
    table_id: str = ""
    preset: str = "standard"  # the ruleset the table opens with (R13, R14.6)
    rules: Ruleset = field(default_factory=Ruleset)
    credits: int = 0
    verified: int = 0

    @property
    def name_width(self) -> int:
        return max(len(p) for p in self.players)


def set_up(game: Game) -> None:
    """Credit a wallet for each seat of the preset (R14.2.1), open a table (printing its
    ruleset), seat everyone."""
    seats = ALL_PRESETS[game.preset].max_players
    game.players = [f"{name}-{game.tag}" for name in BOTS[:seats]]
    game.table_id = f"demo-{game.tag}"
    game.screen.heading("Setting up")
    for player in game.players:
        credit(game, player)
    request = table_pb2.OpenTableRequest(
        table_id=game.table_id, ruleset=game.preset, request_id=f"demo-open-{game.tag}"
    )
    table = game.api.table("OpenTable", request)
    game.rules = mapping.ruleset(game.preset, table.ruleset_parameters)
    game.screen.line(f"opened table {table.table_id}, ruleset {table.ruleset}:", 2)
    for text in describe_rules(table.ruleset_parameters):
        game.screen.line(text, 4)
    for player in game.players:
        game.api.table(
            "SitDown", table_pb2.SitDownRequest(table_id=game.table_id, player_id=player)
        )
    game.screen.line(f"seated {', '.join(game.players)}", 2)


def credit(game: Game, player: str) -> None:
    game.credits += 1  # each credit its own transfer id: a repeated id would move nothing
    transfer = f"demo-{game.tag}-credit-{game.credits}"
    request = wallet_pb2.CreditRequest(player_id=player, amount=CREDIT, transfer_id=transfer)
    game.balances[player] = game.api.wallet("Credit", request).balance
    game.screen.line(f"credited {CREDIT} coins to {player}: balance {game.balances[player]}", 2)


def describe_rules(p: Any) -> list[str]:
    """The R13 parameters that shape a round, in words, and R14's where the table has them."""
    bonus = p.pile_bonuses
    bonuses = "by category (R6.1)" if (bonus.front or bonus.middle or bonus.back) else "none"
    variants = []
    if p.HasField("horse_card") and p.horse_card != "none":
        variants.append(f"horse card {p.horse_card} (R14.1)")
    if p.extra_suits:
        variants.append(f"{p.max_players} seats, extra suits {p.extra_suits} (R14.2)")
    lines = [f"regional variants: {', '.join(variants)}"] if variants else []
    return [
        *lines,
        f"scoop ×{p.scoop_multiplier}, home run ×{p.home_run_multiplier} more"
        f" (at {p.home_run_min_players}+ players), pile bonuses: {bonuses}",
        f"A-2-3-4-5 ranks {p.wheel} among straights; stakes {p.stake_policy.replace('_', ' ')},"
        f" seat minimum {p.seat_minimum} coins; {p.arrange_seconds} s to arrange",
    ]


def top_up(game: Game) -> None:
    """Keep every bot at the seat minimum (R8.4) so a long demo is never refused a deal."""
    for player in game.players:
        if game.balances[player] < game.rules.seat_minimum:
            credit(game, player)


def finish(game: Game) -> None:
    """Stand everyone up (between rounds: no penalty, R10.5) and sum up."""
    for player in game.players:
        game.api.table(
            "StandUp", table_pb2.StandUpRequest(table_id=game.table_id, player_id=player)
        )
    game.screen.heading("Done")
    game.screen.line(
        f"{plural(game.verified, 'round')} played at table {game.table_id}, every deal verified"
        " fair; the bots have left the table.",
        2,
    )
