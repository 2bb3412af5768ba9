"""A round from deal to reveal (R4.3, R8.3, R9, R10, R11, R12).

Every decision is taken from the round's own events: the deal records the commitment, the
client seed, the players' seeds (R12.8), the hands, the base stake, each player's balance and
the ruleset (R8.3, R13), so scoring and settlement can be recomputed at any time and come out
the same (R9.3).
"""

from __future__ import annotations

from datetime import datetime
from functools import cached_property
from typing import Any
from uuid import UUID

from eventsourcing.domain import Aggregate, event

from domain.errors import PhaseError, RuleError
from domain.fairness.shuffle import commitment, in_seat_order
from domain.ids import round_uuid
from domain.recorded import Outcome, ShowdownRecord, record, recorded_score
from domain.rules.arrangement import PILE_NAMES, Arrangement
from domain.rules.cards import Card, format_cards
from domain.rules.escape import escape_transfers
from domain.rules.play import NO_ARRANGEMENT, Play, declare, parsed_cards, stored_play
from domain.rules.ruleset import Ruleset
from domain.rules.scoring import Seat, score_round
from domain.rules.settlement import gross, settle
from domain.rules.specials import Special, Split


class Round(Aggregate):
    class Dealt(Aggregate.Created):
        """R10.1, R12: the deal. Since class version 2 it records the seeds the players gave
        (R12.8; ``player_seeds``, by player, only those given); the shuffle used
        ``effective_client_seed(client_seed, those seeds in seat order)``."""

        class_version = 2

        round_id: str
        table_id: str
        number: int
        players: list[str]
        hands: dict[str, list[str]]
        commitment: str
        client_seed: str
        player_seeds: dict[str, str]
        base_stake: int
        balances: dict[str, int]
        ruleset: dict[str, Any]
        at: datetime
        deadline: datetime

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 took no player seeds: none were given, so R12.3 used the client seed
            unchanged (R12.8)."""
            state["player_seeds"] = {}

    class Arranged(Aggregate.Event):
        """R4.3: an arrangement, foul or not; the latest one counts."""

        player_id: str
        front: list[str]
        middle: list[str]
        back: list[str]
        foul_reason: str | None
        at: datetime

    class SpecialDeclared(Aggregate.Event):
        """R5.4, R5.5: a declaration the cards support, with its split for split patterns."""

        player_id: str
        declared: str
        special: str
        front: list[str]
        middle: list[str]
        back: list[str]
        at: datetime

    class PlayerEscaped(Aggregate.Event):
        """R11: the player left; ``transfers`` is the penalty and its shares (sums to 0)."""

        player_id: str
        transfers: dict[str, int]
        at: datetime

    class Revealed(Aggregate.Event):
        """R10.3: the showdown. Publishes the seed (R12.6) and records the scored result: the
        totals (R6.8), the settlement (R9) and, since class version 2, the showdown itself
        (``domain.recorded.record``), so that readers copy it rather than score again."""

        class_version = 2

        server_seed: str
        points: dict[str, int]
        coins: dict[str, int]
        result: ShowdownRecord | None
        at: datetime

        @staticmethod
        def upcast_v1_v2(state: dict[str, Any]) -> None:
            """Version 1 recorded no showdown: ``None`` says it is to be scored from the
            round's own events, which R9.3 makes come out as it did at the reveal."""
            state["result"] = None

    class Abandoned(Aggregate.Event):
        """R11.3: fewer than two players remain; no showdown. The seed is published too."""

        server_seed: str
        at: datetime

    @staticmethod
    def create_id(round_id: str) -> UUID:
        return round_uuid(round_id)

    @event(Dealt)
    def __init__(
        self,
        round_id: str,
        table_id: str,
        number: int,
        players: list[str],
        hands: dict[str, list[str]],
        commitment: str,
        client_seed: str,
        player_seeds: dict[str, str],
        base_stake: int,
        balances: dict[str, int],
        ruleset: dict[str, Any],
        at: datetime,
        deadline: datetime,
    ) -> None:
        self.round_id = round_id
        self.table_id = table_id
        self.number = number
        self.players = players
        self.hands = hands
        self.commitment = commitment
        self.client_seed = client_seed
        self.player_seeds = player_seeds
        self.base_stake = base_stake
        self.balances = balances
        self.ruleset_data = ruleset
        self.dealt_at = at
        self.deadline = deadline
        self.submissions: dict[str, dict[str, Any]] = {}
        self.escaped: dict[str, dict[str, int]] = {}
        self.server_seed: str | None = None
        self.points: dict[str, int] = {}
        self.coins: dict[str, int] = {}
        self.result: ShowdownRecord | None = None
        self.ended_at: datetime | None = None
        self.revealed = False

    _DERIVED = frozenset({"ruleset", "_recorded"})

    def __getstate__(self) -> dict[str, Any]:
        """Copies (the repository hands out deep copies) leave out what is derived from the
        events and recomputed on demand."""
        return {k: v for k, v in self.__dict__.items() if k not in self._DERIVED}

    # Queries ----------------------------------------------------------------------------------

    @cached_property
    def ruleset(self) -> Ruleset:
        return Ruleset.from_dict(self.ruleset_data)

    @property
    def ended(self) -> bool:
        return self.ended_at is not None

    @property
    def phase(self) -> str:
        """``dealt`` (in progress, R10), ``revealed`` (R10.3) or ``abandoned`` (R11.3)."""
        return "revealed" if self.revealed else "abandoned" if self.ended else "dealt"

    @property
    def seat_seeds(self) -> list[tuple[str, str]]:
        """R12.8: every player's seed in seat order ("" for none given)."""
        return in_seat_order(self.players, self.player_seeds)

    @property
    def active(self) -> list[str]:
        """R10.1, R11.3: the players still in the round, in seat order."""
        return [p for p in self.players if p not in self.escaped]

    def hand(self, player_id: str) -> tuple[Card, ...]:
        return parsed_cards(tuple(self.hands[player_id]), self._copies)

    @property
    def _copies(self) -> int:
        """R14.2.3: how often a card may appear in a hand: twice with an extra suit."""
        return 2 if self.ruleset.extra_suits else 1

    def play_of(self, player_id: str) -> Play:
        """What the player brings to the showdown: the latest submission (R4.3)."""
        submission = self.submissions.get(player_id)
        if submission is None:
            return NO_ARRANGEMENT
        piles = (tuple(submission[pile]) for pile in PILE_NAMES)
        return stored_play(submission.get("special", ""), *piles, self._copies)

    def not_ready(self) -> list[str]:
        """R10.3: active players with no arrangement, or a foul one."""
        submitted = self.submissions
        return [p for p in self.active if p not in submitted or submitted[p].get("foul_reason")]

    def can_reveal(self, now: datetime) -> bool:
        return not self.ended and (now >= self.deadline or not self.not_ready())

    def outcome(self) -> Outcome:
        """R6, R7, R9: the score of the active players and the settlement against the balances
        at the deal, scored now from the recorded submissions (what the reveal decides and the
        audit re-derives)."""
        active = self.active
        seats = [Seat(p, self.play_of(p), self.hand(p)) for p in active]  # R14.1.2: the horse
        score = score_round(seats, self.ruleset)
        coins = settle(gross(score.points, self.base_stake), [self.balances[p] for p in active])
        return Outcome(score, dict(zip(active, coins, strict=True)))

    def revealed_outcome(self) -> Outcome | None:
        """The outcome the reveal recorded, or None for a round not revealed: copied from the
        ``Revealed`` event, not scored again (record once, copy on read). A round revealed
        before the event recorded its showdown (class version 1) is scored once from its events
        (R9.3)."""
        if not self.revealed:
            return None
        return self._recorded

    @cached_property
    def _recorded(self) -> Outcome:
        if self.result is None:
            return self.outcome()
        return Outcome(recorded_score(self.result, self.points), dict(self.coins))

    # Commands ---------------------------------------------------------------------------------

    def _check_can_submit(self, player_id: str, now: datetime) -> None:
        """R10.2, R10.4, R11.3: only active players, before the deadline, before the reveal."""
        if self.ended:
            raise PhaseError(f"round {self.round_id} is over: no command changes it (R10.4)")
        if player_id not in self.players:
            raise PhaseError(
                f"player {player_id} is not in round {self.round_id}", field="player_id"
            )
        if player_id in self.escaped:
            raise PhaseError(f"player {player_id} left round {self.round_id}", field="player_id")
        if now >= self.deadline:
            raise PhaseError(
                f"the deadline of round {self.round_id} has passed "
                f"({self.deadline.isoformat()}): submissions are refused (R10.2)"
            )

    def arrange(
        self, player_id: str, front: list[Card], middle: list[Card], back: list[Card], now: datetime
    ) -> str | None:
        """R4.1, R4.3: accept an arrangement of the player's own cards; a foul is accepted as
        a draft. Returns why it is a foul, or None."""
        self._check_can_submit(player_id, now)
        arrangement = Arrangement.of(front, middle, back, dealt=self.hand(player_id))
        reason = arrangement.foul_reason(self.ruleset.pile_order)
        self._arranged(
            player_id,
            format_cards(arrangement.front),
            format_cards(arrangement.middle),
            format_cards(arrangement.back),
            reason,
            now,
        )
        return reason

    @event(Arranged)
    def _arranged(
        self,
        player_id: str,
        front: list[str],
        middle: list[str],
        back: list[str],
        foul_reason: str | None,
        at: datetime,
    ) -> None:
        self.submissions[player_id] = {
            "front": front,
            "middle": middle,
            "back": back,
            "foul_reason": foul_reason,
        }

    def declare(self, player_id: str, declared: str, split: Split | None, now: datetime) -> Special:
        """R5.4, R5.5: declare a named special or ``any``; refused when the cards do not
        support it, and then nothing changes."""
        self._check_can_submit(player_id, now)
        hand = self.hand(player_id)
        if split is not None:  # R4.1 for the given split; names the pile at fault
            Arrangement.of(split.front, split.middle, split.back, dealt=hand)
        play = declare(hand, declared, self.ruleset, split)
        assert play.special is not None
        piles = play.split if play.split is not None else Split((), (), ())
        self._declared(
            player_id,
            declared,
            play.special.id,
            format_cards(piles.front),
            format_cards(piles.middle),
            format_cards(piles.back),
            now,
        )
        return play.special

    @event(SpecialDeclared)
    def _declared(
        self,
        player_id: str,
        declared: str,
        special: str,
        front: list[str],
        middle: list[str],
        back: list[str],
        at: datetime,
    ) -> None:
        self.submissions[player_id] = {
            "special": special,
            "declared": declared,
            "front": front,
            "middle": middle,
            "back": back,
        }

    def escape(self, player_id: str, now: datetime) -> dict[str, int]:
        """R11: the player leaves mid-round and pays the penalty to the others."""
        if self.ended:
            raise PhaseError(f"round {self.round_id} is over")
        if player_id not in self.active:
            raise PhaseError(f"player {player_id} is not active in round {self.round_id}")
        transfers = self.escape_coins(player_id)
        self._escaped(player_id, transfers, now)
        return transfers

    def escape_coins(self, player_id: str) -> dict[str, int]:
        """R11.1, R11.2: what ``player_id`` escaping now would pay, and who would get it."""
        return escape_transfers(
            player_id,
            self.active,
            base=self.base_stake,
            balance_at_deal=self.balances[player_id],
            multiple=self.ruleset.escape_penalty_multiple,
        )

    @event(PlayerEscaped)
    def _escaped(self, player_id: str, transfers: dict[str, int], at: datetime) -> None:
        self.escaped[player_id] = transfers

    def _check_seed(self, server_seed: bytes) -> None:
        """R12.6: only the seed the deal committed to ends the round."""
        if commitment(server_seed) != self.commitment:
            raise RuleError("the server seed does not match the round's commitment")

    def reveal(self, server_seed: bytes, now: datetime) -> Outcome:
        """R10.3: reveal once everyone active is ready, or at any time after the deadline;
        settles (R9) and publishes the seed (R12.6)."""
        if self.ended:
            raise PhaseError(f"round {self.round_id} is already over (R10.4)")
        self._check_seed(server_seed)
        if not self.can_reveal(now):
            waiting = ", ".join(self.not_ready())
            raise PhaseError(
                f"round {self.round_id} cannot be revealed before its deadline "
                f"({self.deadline.isoformat()}): still waiting for a non-foul "
                f"arrangement from {waiting}"
            )
        outcome = self.outcome()
        points = {s.player_id: s.points for s in outcome.score.players}
        self._revealed(server_seed.hex(), points, outcome.coins, record(outcome.score), now)
        self.__dict__["_recorded"] = outcome  # what was just recorded, without reading it back
        return outcome

    @event(Revealed)
    def _revealed(
        self,
        server_seed: str,
        points: dict[str, int],
        coins: dict[str, int],
        result: ShowdownRecord | None,
        at: datetime,
    ) -> None:
        self.server_seed = server_seed
        self.points = points
        self.coins = coins
        self.result = result
        self.ended_at = at
        self.revealed = True

    def abandon(self, server_seed: bytes, now: datetime) -> None:
        """R11.3: fewer than two players remain, so the round ends without a showdown."""
        if self.ended:
            raise PhaseError(f"round {self.round_id} is already over")
        if len(self.active) >= 2:
            raise PhaseError(f"round {self.round_id} still has {len(self.active)} players")
        self._check_seed(server_seed)
        self._abandoned(server_seed.hex(), now)

    @event(Abandoned)
    def _abandoned(self, server_seed: str, at: datetime) -> None:
        self.server_seed = server_seed
        self.ended_at = at
