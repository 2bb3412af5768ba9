"""The event-sourced application: each command loads aggregates, asks the domain, and saves
every changed aggregate; its events are stored all together or not at all.

Commands run on the process's one writer (``service.eventstore.writer``), which commits the events
of the commands waiting together in one transaction and answers each once it is durable. A command
that is refused raises, and whatever it changed is put back, so it stores nothing. A commit
that loses an optimistic-concurrency race with another replica is run again from fresh loads a
bounded number of times.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar, ParamSpec, TypeVar
from uuid import UUID, uuid4

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate

from domain import showdown
from domain.dealing import deal_record, dealt_round
from domain.errors import PhaseError, RuleError, SeatError
from domain.fairness.seeds import KEY_BYTES, NONCE_BYTES, KeyRing
from domain.fairness.shuffle import check_player_seeds
from domain.ids import MAX_ID_LENGTH as MAX_ID_LENGTH  # re-exported: callers import it here
from domain.ids import check_id as check_id
from domain.ids import (
    deal_round_id,
    round_uuid,
    table_uuid,
    transfer_uuid,
    wallet_uuid,
)
from domain.results import round_result
from domain.round import Round
from domain.rules.cards import Card
from domain.rules.ruleset import Ruleset
from domain.rules.specials import Split
from domain.rules.stakes import check_can_sit
from domain.table import Table
from domain.wallet import Transfer, Wallet
from service import caller
from service.clock import Clock, SystemClock
from service.errors import AlreadyExists, NotFound
from service.eventstore.answers import Saved
from service.eventstore.eventlog import EventLogApplication, command
from service.replies import ArrangeResult, Balance, RevealResult, StandUpResult
from service.security.access import check_dealer

P = ParamSpec("P")
R = TypeVar("R")
A = TypeVar("A")

MAX_CLIENT_SEED_LENGTH = 256


def no_wallet(player_id: str) -> NotFound:
    """The refusal of a player who has no wallet: every wallet begins with a credit."""
    return NotFound(f"player {player_id!r} has no wallet: credit coins first")


class Thirteen(EventLogApplication):
    """Tables, rounds and wallets of 十三水 (docs/rules.md R1–R13)."""

    name = "Thirteen"
    env: ClassVar[dict[str, str]] = {"AGGREGATE_CACHE_MAXSIZE": "5000", "SQLITE_LOCK_TIMEOUT": "30"}

    def __init__(
        self,
        env: dict[str, str] | None = None,
        *,
        clock: Clock | None = None,
        seed_keys: KeyRing | Callable[[], KeyRing] | None = None,
        nonces: Callable[[], bytes] | None = None,
    ) -> None:
        """``seed_keys``: the keys the server seeds are derived from (``domain.fairness.seeds``), or
        what reads them when first needed (``service.seed_keys``); without, a random key held only
        in memory, so tables it commits cannot be dealt after the application is gone. ``nonces``:
        the fresh public randomness of each commitment (R12.1); a test may fix it."""
        super().__init__(env)
        self.clock = clock or SystemClock()
        self._seed_keys = seed_keys or KeyRing.of([secrets.token_bytes(KEY_BYTES)])
        self.nonces = nonces or (lambda: secrets.token_bytes(NONCE_BYTES))

    @property
    def seed_keys(self) -> KeyRing:
        """The seed keys, read on first use when given as a reader (a key file)."""
        if not isinstance(self._seed_keys, KeyRing):
            self._seed_keys = self._seed_keys()
        return self._seed_keys

    def _find(self, cls: type[A], aggregate_id: UUID) -> A | None:
        """In a command, the writer's aggregate (``service.eventstore.writer``); elsewhere a
        reader's copy."""
        found: Aggregate | None
        if self.writer.is_current():
            found = self.writer.load(aggregate_id)
        else:
            try:
                found = self.repository.get(aggregate_id)
            except AggregateNotFoundError:
                found = None
        if found is None:
            return None
        assert isinstance(found, cls)
        return found

    def _get(self, cls: type[A], aggregate_id: UUID, what: str) -> A:
        found = self._find(cls, aggregate_id)
        if found is None:
            raise NotFound(what)
        return found

    def table(self, table_id: str) -> Table:
        check_id(table_id, "table_id")
        return self._get(Table, table_uuid(table_id), f"table {table_id!r} does not exist")

    def check_table(self, table_id: str) -> None:
        """NOT_FOUND unless the table was opened: one indexed read of its first event instead
        of loading (and copying) the aggregate, for a call that reads only the views."""
        check_id(table_id, "table_id")
        if not self.recorder.select_events(table_uuid(table_id), limit=1):
            raise NotFound(f"table {table_id!r} does not exist")

    def round(self, round_id: str) -> Round:
        check_id(round_id, "round_id")
        return self._get(Round, round_uuid(round_id), f"round {round_id!r} does not exist")

    def wallet(self, player_id: str) -> Wallet:
        check_id(player_id, "player_id")
        found = self._find(Wallet, wallet_uuid(player_id))
        if found is None:
            raise no_wallet(player_id)
        return found

    def _run_by_caller(self, table_id: str) -> Table:
        """The table, for a command that runs it: only its dealer or an admin may (issue 11,
        ``service.security.access``); refused before anything changes."""
        table = self.table(table_id)
        check_dealer(caller.current(), table.table_id, table.dealer)
        return table

    # Wallets ----------------------------------------------------------------------------------

    def _transfer(self, kind: str, player_id: str, amount: int, transfer_id: str) -> Balance:
        """A ``credit`` (the first one opens the wallet) or a ``debit``, once per transfer id: a
        retry with the same request answers the balance it left."""
        check_id(player_id, "player_id")
        check_id(transfer_id, "transfer_id")
        done = self._find(Transfer, transfer_uuid(transfer_id))
        if done is not None:
            if done.same_request(player_id, kind, amount):
                return Balance(player_id, done.balance)
            raise AlreadyExists(
                f"transfer {transfer_id!r} was already used for a {done.kind} "
                f"of {done.amount} coins to {done.player_id!r}",
                field="transfer_id",
            )
        wallet = self._find(Wallet, wallet_uuid(player_id))
        if wallet is None:
            if kind != "credit":
                raise no_wallet(player_id)
            wallet = Wallet(player_id=player_id)
        if kind == "credit":
            wallet.credit(transfer_id, amount)
        else:
            wallet.debit(transfer_id, amount)
        transfer = Transfer(
            transfer_id=transfer_id,
            player_id=player_id,
            kind=kind,
            amount=amount,
            balance=wallet.balance,
        )
        self.save(wallet, transfer)
        return Balance(player_id, wallet.balance)

    @command
    def credit(self, player_id: str, amount: int, transfer_id: str) -> Balance:
        return self._transfer("credit", player_id, amount, transfer_id)

    @command
    def debit(self, player_id: str, amount: int, transfer_id: str) -> Balance:
        """R10.6: refused above the balance or while in a dealt, unrevealed round."""
        return self._transfer("debit", player_id, amount, transfer_id)

    # Tables -----------------------------------------------------------------------------------

    @command
    def open_table(self, table_id: str, ruleset: Ruleset, request_id: str = "") -> Table:
        """R13: the ruleset is recorded in full; R12.1: the first commitment is published."""
        check_id(table_id, "table_id")
        if request_id:
            check_id(request_id, "request_id")
        existing = self._find(Table, table_uuid(table_id))
        if existing is not None:
            if (
                request_id
                and existing.request_id == request_id
                and existing.ruleset_data == ruleset.to_dict()
                and existing.dealer in ("", caller.current().identity)  # the same caller's retry
            ):
                return existing
            raise AlreadyExists(f"table {table_id!r} already exists", field="table_id")
        table = Table.open(
            table_id,
            ruleset,
            request_id,
            self.seed_keys,
            self.nonces(),
            caller.current().identity,
            self.clock.now(),
        )
        self.save(table)
        return table

    @command
    def sit_down(self, table_id: str, player_id: str) -> Table:
        """R8.1, R10.1, R10.6."""
        check_id(player_id, "player_id")
        table = self._run_by_caller(table_id)
        wallet = self.wallet(player_id)
        if player_id in table.seats:
            return table
        check_can_sit(player_id, wallet.balance, table.ruleset)
        wallet.sit_down(table_id)
        table.sit_down(player_id, self.clock.now())
        self.save(table, wallet)
        return table

    @command
    def stand_up(self, table_id: str, player_id: str) -> StandUpResult:
        """R10.5: free between rounds; between the deal and the showdown an escape (R11)
        (``domain.showdown.stand_up``)."""
        check_id(player_id, "player_id")
        table = self._run_by_caller(table_id)
        if player_id not in table.seats:
            raise SeatError(
                f"player {player_id!r} is not seated at table {table_id!r}", field="player_id"
            )
        now = self.clock.now()
        wallet = self.wallet(player_id)
        round_ = self.round(table.current_round) if table.current_round else None
        others = {p: self.wallet(p) for p in round_.active if p != player_id} if round_ else {}
        left = showdown.stand_up(table, wallet, round_, others, self.seed_keys, self.nonces(), now)
        if not left.escaped:
            self.save(table, wallet)
            return StandUpResult(table, False, {})
        shares = [others[p] for p in left.transfers if p in others]
        self.save(table, round_, wallet, *shares)
        return StandUpResult(table, True, left.transfers)

    # Rounds -----------------------------------------------------------------------------------

    @command
    def deal(
        self,
        table_id: str,
        client_seed: str = "",
        request_id: str = "",
        player_seeds: Mapping[str, str] | None = None,
    ) -> Round:
        """R10.1, R12: deal to everyone seated from the committed seed, the client seed and
        the players' seeds (R12.8, by player id); R8.3, R8.4: fix the base stake and the
        balances. Each player's wallet is locked until the reveal (R10.6). A repeated
        ``request_id`` answers its round when the seeds are the same, else ``AlreadyExists``."""
        if len(client_seed) > MAX_CLIENT_SEED_LENGTH:
            raise RuleError(
                f"client_seed is longer than {MAX_CLIENT_SEED_LENGTH} characters",
                field="client_seed",
            )
        table = self._run_by_caller(table_id)
        if request_id:
            check_id(request_id, "request_id")
            round_id = deal_round_id(table_id, request_id)
            # Only a round the table lists can exist (``Table.has_round``): a new deal reads
            # nothing. A table behind another replica's deal of this round fails the commit on
            # the round's and the table's versions, and the deal runs again from fresh loads.
            existing = (
                self._find(Round, round_uuid(round_id)) if table.has_round(round_id) else None
            )
            if existing is not None:
                seeds = check_player_seeds(player_seeds or {}, existing.players)
                if existing.client_seed == client_seed and existing.player_seeds == seeds:
                    return existing
                raise AlreadyExists(
                    f"request {request_id!r} already dealt round {round_id} "
                    "with another client seed or other player seeds",
                    field="request_id",
                )
        else:
            round_id = str(uuid4())
        now = self.clock.now()
        seed = table.committed_seed(self.seed_keys)  # R12.1, before anything changes
        table.start_round(round_id, now)
        wallets = [self.wallet(p) for p in table.seats]
        record = deal_record(
            round_id=round_id,
            table_id=table_id,
            number=len(table.round_ids),
            balances={w.player_id: w.balance for w in wallets},
            server_seed=seed,
            client_seed=client_seed,
            ruleset=table.ruleset,
            at=now,
            player_seeds=player_seeds,
        )
        round_ = dealt_round(record, table.ruleset)
        for wallet in wallets:
            wallet.enter_round(round_id)
        self.save(table, round_, *wallets)
        return round_

    @command
    def arrange(
        self,
        round_id: str,
        player_id: str,
        front: Sequence[Card],
        middle: Sequence[Card],
        back: Sequence[Card],
        special: str = "",
    ) -> ArrangeResult:
        """R4 (a foul is accepted as a draft) or, with ``special``, R5.4 and R5.5."""
        round_ = self.round(round_id)
        self._run_by_caller(round_.table_id)
        check_id(player_id, "player_id")
        now = self.clock.now()
        if special:
            split = (
                Split(tuple(front), tuple(middle), tuple(back))
                if (front or middle or back)
                else None
            )
            played = round_.declare(player_id, special, split, now)
            self.save(round_)
            return ArrangeResult(round_, player_id, None, played)
        reason = round_.arrange(player_id, list(front), list(middle), list(back), now)
        self.save(round_)
        return ArrangeResult(round_, player_id, reason, None)

    @command
    def reveal(self, round_id: str) -> RevealResult:
        """R10.3: settle (R9) every active player's wallet in the same save as the reveal, and
        publish the table's next commitment (R12.1) (``domain.showdown.reveal``). Revealing
        again returns the result the reveal recorded."""
        round_ = self.round(round_id)
        table = self._run_by_caller(round_.table_id)
        if round_.revealed:
            return RevealResult(round_, round_result(round_), self._stored_reveal(round_))
        if round_.ended:
            raise PhaseError(f"round {round_id} ended without a showdown (R11.3)")
        now = self.clock.now()
        wallets = {p: self.wallet(p) for p in round_.active}
        showdown.reveal(round_, table, wallets, self.seed_keys, self.nonces(), now)
        saved = self.save(round_, table, *wallets.values())
        return RevealResult(round_, round_result(round_), saved)

    def _stored_reveal(self, round_: Round) -> Saved:
        """A reveal as stored: the round's head at its stored version, the log's position; or,
        revealed by an earlier command of this batch, that reveal's save."""
        staged = self.writer.staged(round_.id)
        if staged is not None:
            return staged
        head = self.chain_head(round_.id, round_.version)
        return Saved.stored(self.max_position(), round_.id, head)

    def overdue(self, round_ids: Sequence[str]) -> list[str]:
        """Of these rounds, those past their deadline and not over (R10.3)."""
        now = self.clock.now()
        found = []
        for round_id in round_ids:
            round_ = self._find(Round, round_uuid(round_id))
            if round_ is not None and not round_.ended and now >= round_.deadline:
                found.append(round_id)
        return found
