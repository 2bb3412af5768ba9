"""Seeded random play through the real gRPC API, for the invariants of the read models.

Players get coins, sit at tables, play rounds with good, foul and missing arrangements and
special declarations, sometimes escape, sometimes leave the reveal to the deadline sweeper,
and take coins out between rounds.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Any

import grpc

from domain.rules.cards import parse_cards
from domain.rules.ruleset import STANDARD
from domain.rules.specials import qualifying
from domain.rules.suggest import suggest
from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from tests.support.server import ServerThread


@dataclass
class Played:
    reveals: dict[str, Any] = field(default_factory=dict)  # round id → RevealResponse
    abandoned: set[str] = field(default_factory=set)
    unrevealed: set[str] = field(default_factory=set)
    players: set[str] = field(default_factory=set)
    tables: list[str] = field(default_factory=list)


def _wait_revealed(server: ServerThread, round_id: str, timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = server.tables.GetRound(table_pb2.GetRoundRequest(round_id=round_id))
        if got.phase == table_pb2.ROUND_PHASE_REVEALED:
            return got
        time.sleep(0.02)
    raise AssertionError(f"round {round_id} was not revealed by the sweeper")


def simulate(server: ServerThread, seed: int, rounds: int = 12) -> Played:
    rng = random.Random(seed)
    played = Played()
    names = [f"p{seed}-{i}" for i in range(8)]
    for name in names:
        server.wallets.Credit(
            wallet_pb2.CreditRequest(
                player_id=name, amount=rng.choice([60, 500, 5_000]), transfer_id=f"in-{name}"
            )
        )
        played.players.add(name)
    for t in range(2):
        table_id = f"t{seed}-{t}"
        server.tables.OpenTable(
            table_pb2.OpenTableRequest(
                table_id=table_id, ruleset=rng.choice(["standard", "fujian"])
            )
        )
        played.tables.append(table_id)
        for name in names[4 * t : 4 * t + rng.randint(2, 4)]:
            server.tables.SitDown(table_pb2.SitDownRequest(table_id=table_id, player_id=name))
    for n in range(rounds):
        table_id = played.tables[n % 2]
        try:
            dealt = server.tables.Deal(
                table_pb2.DealRequest(table_id=table_id, client_seed=f"c{n}")
            )
        except grpc.RpcError:  # fewer than two seated, or someone fell below the minimum
            continue
        _play_round(server, rng, dealt, played)
        if rng.random() < 0.3:  # a player takes coins out between rounds (R10.6 allows it)
            name = rng.choice(names)
            balance = server.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id=name))
            if balance.balance > 10 and not balance.round_id:
                server.wallets.Debit(
                    wallet_pb2.DebitRequest(
                        player_id=name, amount=rng.randint(1, 10), transfer_id=f"out-{seed}-{n}"
                    )
                )
    for table_id in played.tables:  # one round left open at each table: never settled
        try:
            dealt = server.tables.Deal(table_pb2.DealRequest(table_id=table_id))
        except grpc.RpcError:
            continue
        played.unrevealed.add(dealt.round_id)
    return played


def _play_round(server: ServerThread, rng: random.Random, dealt: Any, played: Played) -> None:
    round_id = dealt.round_id
    escaped = None
    if rng.random() < 0.15:
        escaped = dealt.hands[rng.randrange(len(dealt.hands))].player_id
        server.tables.StandUp(table_pb2.StandUpRequest(table_id=dealt.table_id, player_id=escaped))
        if len(dealt.hands) == 2:
            played.abandoned.add(round_id)
            return
    missing = False
    for hand in dealt.hands:
        if hand.player_id == escaped:
            continue
        cards = parse_cards(hand.cards)
        how = rng.choice(["good", "good", "good", "foul", "special", "missing"])
        if how == "missing":
            missing = True
            continue
        if how == "special" and qualifying(cards):
            server.tables.Arrange(
                table_pb2.ArrangeRequest(round_id=round_id, player_id=hand.player_id, special="any")
            )
            continue
        a = suggest(cards, STANDARD).arrangement
        piles = (a.front, a.back, a.middle) if how == "foul" else (a.front, a.middle, a.back)
        response = server.tables.Arrange(
            table_pb2.ArrangeRequest(
                round_id=round_id,
                player_id=hand.player_id,
                front=[str(c) for c in piles[0]],
                middle=[str(c) for c in piles[1]],
                back=[str(c) for c in piles[2]],
            )
        )
        if response.foul:
            missing = True
    if missing:
        server.clock.advance(61)  # R10.3: the sweeper reveals at the deadline
        _wait_revealed(server, round_id)
    revealed = server.tables.Reveal(table_pb2.RevealRequest(round_id=round_id))
    played.reveals[round_id] = revealed
