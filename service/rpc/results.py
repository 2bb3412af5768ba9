"""``ResultsService``: the read models over gRPC, each read as of the call (``views``)."""

from __future__ import annotations

from domain.errors import PhaseError, RuleError
from projections.store import FinishedRound, LedgerEntry, PlayerRound, PlayerStats, ViewStore
from service._generated.thirteen.v1 import results_pb2, results_pb2_grpc, table_pb2
from service.application import Thirteen, check_id, no_wallet
from service.errors import NotFound
from service.rpc import mapping, paging
from service.rpc.rounds import known_round
from service.rpc.runner import Context, Runner, rpc
from service.rpc.views import Views


def _player(store: ViewStore, player_id: str) -> int:
    """The player's balance in the views; NOT_FOUND for a player without a wallet. Every wallet
    begins with a credit, in the same commit that opens it, so views that hold the log up to
    some position know of every wallet opened up to there."""
    balance = store.balance(player_id)
    if balance is None:
        raise no_wallet(player_id)
    return balance


def _ledger_entry(e: LedgerEntry) -> results_pb2.LedgerEntry:
    return results_pb2.LedgerEntry(
        entry_id=e.txn_id,
        amount=e.amount,
        kind=e.kind,
        round_id=e.round_id,
        transfer_id=e.transfer_id,
        balance_after=e.balance_after,
        occurred_at=mapping.timestamp(e.at),
    )


class ResultsServicer(results_pb2_grpc.ResultsServiceServicer):
    """Every read waits for the views to hold what was stored before the call (read your
    writes: a ledger after a credit, results after a reveal), except where less is enough
    (a round's row, final once written; a later page of recall)."""

    def __init__(self, app: Thirteen, views: Views, run: Runner) -> None:
        self.app = app
        self.views = views
        self.run = run

    def _round_result(self, round_id: str) -> FinishedRound:
        """The view's round, waiting (bounded) for the views to reach a round the write side
        has revealed; UNAVAILABLE rather than stale data."""
        check_id(round_id, "round_id")  # before the view: PostgreSQL text cannot hold NUL

        def ended() -> bool:
            # A reader or an auditor is refused alike for a round in progress and for none
            # (``known_round``); a dealer or an admin hears which.
            if not known_round(self.app, round_id).ended:
                raise PhaseError(f"round {round_id} is not revealed yet", field="round_id")
            return True

        found = self.views.finished_round(round_id, ended)
        assert found is not None
        if found.result is None:
            raise PhaseError(
                f"round {round_id} ended without a showdown (R11.3): no result", field="round_id"
            )
        return found

    def _table_history(self, table_id: str, after: int, limit: int) -> list[FinishedRound]:
        self.app.check_table(table_id)  # NOT_FOUND for an unknown table
        return self.views.read(
            lambda s: s.table_history(table_id, after, limit), f"the rounds of table {table_id!r}"
        )

    def _ledger(self, player_id: str, after: int, limit: int) -> list[LedgerEntry]:
        check_id(player_id, "player_id")

        def entries(store: ViewStore) -> list[LedgerEntry]:
            _player(store, player_id)
            return store.ledger(player_id, after, limit)

        return self.views.read(entries, f"the ledger of {player_id!r}")

    def _recall(self, player_id: str, before: int, limit: int) -> list[PlayerRound]:
        """Game recall as of the call: every round that was over when it came in (the last
        game is the one a dispute is about). A later page (``before``) needs the views only up
        to where it starts: rows are written in the order of their positions, so none below it
        can still come."""
        check_id(player_id, "player_id")

        def page(store: ViewStore) -> list[PlayerRound]:
            _player(store, player_id)
            return store.player_rounds(player_id, before, limit)

        what = f"the rounds of {player_id!r} that are over"
        if not before:
            return self.views.read(page, what)
        try:
            return self.views.read(page, what, upto=before - 1)
        except NotFound:  # no wallet up to there (a made-up token): perhaps one since
            return self.views.read(page, what)

    def _stats(self, player_id: str) -> tuple[PlayerStats, int]:
        check_id(player_id, "player_id")

        def stats(store: ViewStore) -> tuple[PlayerStats, int]:
            balance = _player(store, player_id)
            return store.player_stats(player_id), balance

        return self.views.read(stats, f"the statistics of {player_id!r}")

    @rpc
    async def GetRoundResult(
        self, request: results_pb2.GetRoundResultRequest, context: Context
    ) -> results_pb2.GetRoundResultResponse:
        found = await self.run(self._round_result, request.round_id)
        assert found.result is not None
        return results_pb2.GetRoundResultResponse(
            **mapping.result_fields(found.result), receipt=found.receipt
        )

    @rpc
    async def ListRoundResults(
        self, request: results_pb2.ListRoundResultsRequest, context: Context
    ) -> results_pb2.ListRoundResultsResponse:
        # Not ListRounds' scope ("t:"): its tokens count rounds, these hold a round's number.
        return await paging.listed(
            f"results:{request.table_id}",
            request,
            lambda after, limit: self._table_history(request.table_id, after, limit),
            lambda row: row.number,
            self._table_round,
            lambda rounds, following: results_pb2.ListRoundResultsResponse(
                rounds=rounds, next_page_token=following
            ),
            self.run.heavy,
            paging.MAX_ROUNDS_PAGE_SIZE,
        )

    @staticmethod
    def _table_round(found: FinishedRound) -> results_pb2.TableRound:
        message = results_pb2.TableRound(
            round_id=found.round_id,
            number=found.number,
            outcome=found.outcome,
            base_stake=found.base_stake,
            ended_at=mapping.timestamp(found.ended_at),
        )
        if found.result is not None:
            message.result.CopyFrom(
                table_pb2.RoundResult(**mapping.result_fields(found.result), receipt=found.receipt)
            )
        return message

    @rpc
    async def ListLedgerEntries(
        self, request: results_pb2.ListLedgerEntriesRequest, context: Context
    ) -> results_pb2.ListLedgerEntriesResponse:
        return await paging.listed(
            f"p:{request.player_id}",
            request,
            lambda after, limit: self._ledger(request.player_id, after, limit),
            lambda row: row.txn_id,
            _ledger_entry,
            lambda entries, following: results_pb2.ListLedgerEntriesResponse(
                entries=entries, next_page_token=following
            ),
            self.run.heavy,
        )

    @rpc
    async def ListPlayerRounds(
        self, request: results_pb2.ListPlayerRoundsRequest, context: Context
    ) -> results_pb2.ListPlayerRoundsResponse:
        return await paging.listed(
            f"recall:{request.player_id}",
            request,
            lambda before, limit: self._recall(request.player_id, before, limit),
            lambda row: row.position,
            self._player_round,
            lambda rounds, following: results_pb2.ListPlayerRoundsResponse(
                rounds=rounds, next_page_token=following
            ),
            self.run.heavy,
            paging.MAX_ROUNDS_PAGE_SIZE,
        )

    @staticmethod
    def _player_round(found: PlayerRound) -> results_pb2.PlayerRound:
        line = found.line
        return results_pb2.PlayerRound(
            round_id=line.round_id,
            table_id=line.table_id,
            number=line.number,
            seat=line.seat,
            dealt_at=mapping.timestamp(line.dealt_at),
            ended_at=mapping.timestamp(line.ended_at),
            outcome=line.outcome,
            base_stake=line.base_stake,
            cards=line.cards,
            front=line.front,
            middle=line.middle,
            back=line.back,
            special=line.special,
            foul=line.foul,
            foul_reason=line.foul_reason,
            escaped=line.escaped,
            points=line.points,
            coins=line.coins,
            balance_before=found.balance_before,
            balance_after=found.balance_after,
        )

    @rpc
    async def GetPlayerStats(
        self, request: results_pb2.GetPlayerStatsRequest, context: Context
    ) -> results_pb2.GetPlayerStatsResponse:
        stats, balance = await self.run(self._stats, request.player_id)
        return results_pb2.GetPlayerStatsResponse(
            player_id=stats.player_id,
            rounds_played=stats.rounds_played,
            net_coins=stats.net_coins,
            points=stats.points,
            piles_won=stats.piles_won,
            scoops=stats.scoops,
            home_runs=stats.home_runs,
            fouls=stats.fouls,
            specials=stats.specials,
            balance=balance,
        )

    @rpc
    async def GetLeaderboard(
        self, request: results_pb2.GetLeaderboardRequest, context: Context
    ) -> results_pb2.GetLeaderboardResponse:
        if request.limit < 0:
            raise RuleError("limit must not be negative", field="limit")
        limit = min(request.limit or 10, paging.MAX_PAGE_SIZE)
        since = mapping.moment(request.since, "since") if request.HasField("since") else None
        rows = await self.run(
            self.views.read, lambda s: s.leaderboard(since, limit), "the leaderboard"
        )
        return results_pb2.GetLeaderboardResponse(
            entries=[
                results_pb2.LeaderboardEntry(rank=i + 1, player_id=p, net_coins=net)
                for i, (p, net, _) in enumerate(rows)
            ]
        )
