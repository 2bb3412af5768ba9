"""What the clients were told: the acknowledged credits, debits, deals, arrangements, escapes
and reveals. The checks compare the service with this, never with itself."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

Piles = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


@dataclass
class Transfer:
    transfer_id: str
    player_id: str
    kind: str  # "credit" or "debit"
    amount: int
    balance: int  # the balance the acknowledgement reported


@dataclass
class RoundSeen:
    round_id: str
    table_id: str
    players: list[str]  # seat order at the deal
    balances: dict[str, int]  # balance_at_deal
    hands: dict[str, list[str]]
    base_stake: int
    active: list[str] = field(default_factory=list)
    arranged: dict[str, Piles | str] = field(default_factory=dict)  # last acked: piles or special
    # arrangements whose first attempt's outcome was unknown and whose retry was refused (the
    # deadline passed meanwhile, say): the first attempt may have been stored
    maybe_arranged: dict[str, list[Piles | str]] = field(default_factory=dict)
    escapes: dict[str, dict[str, int] | None] = field(default_factory=dict)  # None: unknown
    coins: dict[str, int] | None = None  # acknowledged by a Reveal answer
    result: Any = None  # that RevealResponse
    abandoned: bool = False

    @property
    def ended(self) -> bool:
        return self.coins is not None or self.abandoned


class Model:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.players: set[str] = set()
        self.transfers: dict[str, Transfer] = {}  # acknowledged
        self.refused_transfers: dict[str, str] = {}  # transfer id → player: must leave no trace
        self.rounds: dict[str, RoundSeen] = {}
        self.hostile_players: set[str] = set()  # must have no wallet
        self.hostile_tables: set[str] = set()  # must not exist
        self.hostile_transfers: dict[str, str] = {}  # transfer id → player: must leave no trace

    # Recording ---------------------------------------------------------------------------

    def acknowledged_transfer(self, transfer: Transfer) -> None:
        with self._lock:
            self.transfers[transfer.transfer_id] = transfer

    def refused_transfer(self, transfer_id: str, player_id: str) -> None:
        with self._lock:
            self.refused_transfers[transfer_id] = player_id

    def dealt(self, reply: Any) -> RoundSeen:
        seen = RoundSeen(
            round_id=reply.round_id,
            table_id=reply.table_id,
            players=[p.player_id for p in reply.players],
            balances={p.player_id: p.balance_at_deal for p in reply.players},
            hands={h.player_id: list(h.cards) for h in reply.hands},
            base_stake=reply.base_stake,
            active=[p.player_id for p in reply.players],
        )
        with self._lock:
            return self.rounds.setdefault(seen.round_id, seen)

    def revealed(self, round_id: str, reply: Any) -> None:
        with self._lock:
            seen = self.rounds[round_id]
            seen.coins = {p.player_id: p.coins for p in reply.players}
            seen.result = reply

    # Expectations ------------------------------------------------------------------------

    def acknowledged_net(self) -> int:
        """Acknowledged credits minus acknowledged debits: all the coins there should be."""
        with self._lock:
            return sum(
                t.amount if t.kind == "credit" else -t.amount for t in self.transfers.values()
            )

    def expected_balances(self) -> tuple[dict[str, int], set[str]]:
        """Each player's balance from the acknowledgements alone, and the players for whom
        that cannot be known (an escape whose answer was lost)."""
        with self._lock:
            expected = dict.fromkeys(self.players, 0)
            unknown: set[str] = set()
            for t in self.transfers.values():
                expected[t.player_id] += t.amount if t.kind == "credit" else -t.amount
            for seen in self.rounds.values():
                for transfers in seen.escapes.values():
                    if transfers is None:
                        unknown.update(seen.players)
                        continue
                    for player, amount in transfers.items():
                        expected[player] += amount
                for player, amount in (seen.coins or {}).items():
                    expected[player] += amount
            return expected, unknown

    def snapshot_rounds(self) -> list[RoundSeen]:
        with self._lock:
            return list(self.rounds.values())

    def snapshot_transfers(self) -> list[Transfer]:
        with self._lock:
            return list(self.transfers.values())
