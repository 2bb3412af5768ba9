"""The views as pure folds over events: an event in, view records out.

The same fold serves the live projector and a rebuild, so there is one truth. It keeps the
rounds in progress in memory by replaying their events onto the Round aggregate (the aggregate
is itself a fold). That memory is only a cache: after a restart, a reset or a change of leader
it is empty, and a round dealt before is loaded from the store through ``load_round``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar
from uuid import UUID

from eventsourcing.utils import get_topic

from domain.results import RoundResult, round_result
from domain.round import Round
from domain.wallet import Wallet
from projections.listing import ListedRound, listed

EXTERNAL = ""
"""The ledger account on the other side of credits and debits: the empty name, which no
player can have (ids must not be blank). The first version's views called it ``external``,
a valid player id, so such a player's ledger was mixed with the bank's."""


@dataclass(frozen=True)
class Leg:
    account: str
    amount: int


@dataclass(frozen=True)
class Journal:
    """One balanced transaction (Σ legs = 0): a credit, a debit, a round's settlement or an
    escape penalty with its shares."""

    kind: str
    round_id: str
    transfer_id: str
    at: datetime
    legs: tuple[Leg, ...]


@dataclass(frozen=True)
class PlayerLine:
    """One player's part in one revealed round, for statistics and leaderboards."""

    round_id: str
    table_id: str
    player_id: str
    seat: int
    points: int
    coins: int
    foul: bool
    special: str
    piles_won: int
    scoops: int
    home_run: bool
    at: datetime


@dataclass(frozen=True)
class RecallLine:
    """One player's part in one round that is over, for game recall: the hand dealt (R12), what
    the player did with it (R4.3, R5), the points and every coin the round moved for them
    (R9, R11). Made only when the round ends, so no hand shows while it is played (R10.4).

    A player who escaped (R11) or whose round was abandoned (R11.3) brought nothing to a
    showdown: no points and no foul, with the submission made before, if any. The store adds
    the balances before and after the round's coin movements, which only it keeps."""

    round_id: str
    table_id: str
    number: int
    player_id: str
    seat: int
    outcome: str  # "revealed" or "abandoned"
    base_stake: int
    dealt_at: datetime
    ended_at: datetime
    cards: tuple[str, ...]
    front: tuple[str, ...]
    middle: tuple[str, ...]
    back: tuple[str, ...]
    special: str
    foul: bool
    foul_reason: str
    escaped: bool
    points: int
    coins: int


@dataclass(frozen=True)
class RoundRecord:
    """A finished round for the results view and the table history."""

    round_id: str
    table_id: str
    number: int
    outcome: str  # "revealed" or "abandoned"
    base_stake: int
    ruleset: dict[str, Any]
    dealt_at: datetime
    ended_at: datetime
    server_seed: str
    result: RoundResult | None
    receipt: str  # the chain hash of the round's last event (domain.tlog.chain)
    players: tuple[PlayerLine, ...] = ()


@dataclass(frozen=True)
class OpenRound:
    """A dealt round that is not over, with its deadline: after a restart the deadline sweeper
    starts from these instead of reading the whole log (R10.3)."""

    round_uuid: UUID
    round_id: str
    deadline: datetime


Record = Journal | RoundRecord | OpenRound | RecallLine | ListedRound
RoundLoader = Callable[[UUID, int], Round]


@dataclass
class ViewFold:
    open_rounds: dict[UUID, Round] = field(default_factory=dict)

    TOPICS: ClassVar[frozenset[str]] = frozenset(
        [get_topic(Wallet.Credited), get_topic(Wallet.Debited)]
        + [
            get_topic(c)
            for c in vars(Round).values()
            if isinstance(c, type) and issubclass(c, Round.Event)
        ]
    )
    """The only events the views need; the rest need not even be decoded."""

    def apply(self, event: Any, load_round: RoundLoader | None = None) -> list[Record]:
        if isinstance(event, Wallet.Credited | Wallet.Debited):
            return [self._transfer(event)]
        if isinstance(event, Round.Event):
            records, round_ = self._round_event(event, load_round)
            return [*records, listed(round_)]  # the round as ListRounds shows it, now
        return []

    @staticmethod
    def _transfer(event: Wallet.Credited | Wallet.Debited) -> Journal:
        credit = isinstance(event, Wallet.Credited)
        amount = event.amount if credit else -event.amount
        return Journal(
            "credit" if credit else "debit",
            "",
            event.transfer_id,
            event.timestamp,
            (Leg(event.player_id, amount), Leg(EXTERNAL, -amount)),
        )

    def _round_event(
        self, event: Any, load_round: RoundLoader | None
    ) -> tuple[list[Record], Round]:
        """The records of a round event, and the round after it."""
        if isinstance(event, Round.Dealt):
            dealt = event.mutate(None)
            assert isinstance(dealt, Round)
            self.open_rounds[event.originator_id] = dealt
            return [OpenRound(event.originator_id, dealt.round_id, dealt.deadline)], dealt
        round_: Round | None = self.open_rounds.get(event.originator_id)
        if round_ is None:
            if load_round is None:
                raise LookupError(
                    f"round {event.originator_id} was dealt before the fold "
                    "started and no loader was given"
                )
            round_ = load_round(event.originator_id, event.originator_version - 1)
        round_ = event.mutate(round_)
        assert isinstance(round_, Round)
        if isinstance(event, Round.PlayerEscaped):
            self.open_rounds[event.originator_id] = round_
            legs = tuple(Leg(p, amount) for p, amount in event.transfers.items())
            return [Journal("escape_penalty", round_.round_id, "", event.at, legs)], round_
        if isinstance(event, Round.Revealed | Round.Abandoned):
            self.open_rounds.pop(event.originator_id, None)  # absent if dealt before a reset
            return self._ended(round_, event), round_
        self.open_rounds[event.originator_id] = round_
        return [], round_

    @staticmethod
    def _ended(round_: Round, event: Any) -> list[Record]:
        base = dict(
            round_id=round_.round_id,
            table_id=round_.table_id,
            number=round_.number,
            base_stake=round_.base_stake,
            ruleset=round_.ruleset_data,
            dealt_at=round_.dealt_at,
            ended_at=event.at,
            server_seed=round_.server_seed or "",
            receipt=str(getattr(event, "chain", "")),
        )
        if isinstance(event, Round.Abandoned):
            record = RoundRecord(outcome="abandoned", result=None, **base)
            return [record, *recall_lines(round_, None, event.at)]
        result = round_result(round_)
        lines = tuple(
            _player_line(round_, result, p.player_id, round_.players.index(p.player_id), event.at)
            for p in result.players
        )
        settlement = Journal(
            "settlement",
            round_.round_id,
            "",
            event.at,
            tuple(Leg(p, c) for p, c in event.coins.items()),
        )
        record = RoundRecord(outcome="revealed", result=result, players=lines, **base)
        # After the settlement: the store reads its legs for the balances around the round.
        return [record, settlement, *recall_lines(round_, result, event.at)]


def recall_lines(round_: Round, result: RoundResult | None, ended_at: datetime) -> list[RecallLine]:
    """Every player dealt into an ended round, in seat order (R10.1): those at the showdown
    as ``result`` recorded it (copied: record once, copy on read), the others with what they
    submitted."""
    shown = {p.player_id: p for p in result.players} if result is not None else {}
    lines = []
    for seat, player in enumerate(round_.players):
        # R11.1, R11.2: penalties paid or shared out, on top of the settlement (R9).
        coins = sum(t.get(player, 0) for t in round_.escaped.values())
        me = shown.get(player)
        if me is not None:
            piles = (tuple(me.front), tuple(me.middle), tuple(me.back))
            special, foul, reason, points = me.special, me.foul, me.foul_reason, me.points
            coins += me.coins
        else:
            submitted = round_.submissions.get(player, {})
            piles = (
                tuple(submitted.get("front", ())),
                tuple(submitted.get("middle", ())),
                tuple(submitted.get("back", ())),
            )
            special, foul, reason, points = submitted.get("special", ""), False, "", 0
        lines.append(
            RecallLine(
                round_id=round_.round_id,
                table_id=round_.table_id,
                number=round_.number,
                player_id=player,
                seat=seat,
                outcome="revealed" if result is not None else "abandoned",
                base_stake=round_.base_stake,
                dealt_at=round_.dealt_at,
                ended_at=ended_at,
                cards=tuple(round_.hands[player]),
                front=piles[0],
                middle=piles[1],
                back=piles[2],
                special=special,
                foul=foul,
                foul_reason=reason,
                escaped=player in round_.escaped,
                points=points,
                coins=coins,
            )
        )
    return lines


def _player_line(
    round_: Round, result: RoundResult, player: str, seat: int, at: datetime
) -> PlayerLine:
    me = next(p for p in result.players if p.player_id == player)
    piles_won = scoops = 0
    home_run = False
    for pair in result.pairs:
        if player not in (pair.a, pair.b):
            continue
        sign = 1 if pair.a == player else -1
        piles_won += sum(1 for pile in pair.piles if pile * sign > 0)
        if pair.scoop and pair.points * sign > 0:
            scoops += 1
            home_run = home_run or pair.home_run
    return PlayerLine(
        round_.round_id,
        round_.table_id,
        player,
        seat,
        me.points,
        me.coins,
        me.foul,
        me.special,
        piles_won,
        scoops,
        home_run,
        at,
    )
