"""``ResultsService``: the read models over gRPC, each read as of the call (``views``)."""

from __future__ import annotations

from dataclasses import asdict

from domain.errors import PhaseError, RuleError
from projections.store import FinishedRound, LedgerEntry, PlayerStats, ViewStore
from service._generated.thirteen.v1 import results_pb2, results_pb2_grpc
from service.application import Thirteen, check_id
from service.rpc import mapping, paging
from service.rpc.listings import balance_of
from service.rpc.pages import Pages
from service.rpc.rounds import known_round
from service.rpc.runner import Context, Runner, rpc
from service.rpc.views import Views


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

    def __init__(self, app: Thirteen, views: Views, run: Runner, pages: Pages) -> None:
        self.app = app
        self.views = views
        self.run = run
        self.pages = pages

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

    def _ledger(self, player_id: str, after: int, limit: int) -> list[LedgerEntry]:
        check_id(player_id, "player_id")

        def entries(store: ViewStore) -> list[LedgerEntry]:
            balance_of(store, player_id)
            return store.ledger(player_id, after, limit)

        return self.views.read(entries, f"the ledger of {player_id!r}")

    def _stats(self, player_id: str) -> tuple[PlayerStats, int]:
        check_id(player_id, "player_id")

        def stats(store: ViewStore) -> tuple[PlayerStats, int]:
            balance = balance_of(store, player_id)
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
    ) -> results_pb2.ListRoundResultsResponse | bytes:  # bytes: as a reader process encoded it
        page: results_pb2.ListRoundResultsResponse | bytes = await self.pages.of_table(
            "results", request, self.app.check_table
        )
        return page

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
    ) -> results_pb2.ListPlayerRoundsResponse | bytes:  # bytes: as a reader process encoded it
        """Game recall as of the call: every round that was over when it came in (the last
        game is the one a dispute is about)."""
        player_id = request.player_id
        page: results_pb2.ListPlayerRoundsResponse | bytes = await self.pages.listed(
            "recall", player_id, request, lambda: check_id(player_id, "player_id")
        )
        return page

    @rpc
    async def GetPlayerStats(
        self, request: results_pb2.GetPlayerStatsRequest, context: Context
    ) -> results_pb2.GetPlayerStatsResponse:
        stats, balance = await self.run(self._stats, request.player_id)
        # The view's statistics are the message's fields, by name, and the balance beside them
        return results_pb2.GetPlayerStatsResponse(**asdict(stats), balance=balance)

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
