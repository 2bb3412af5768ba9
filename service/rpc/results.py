"""``ResultsService``: the read models over gRPC, with read-your-writes on round results."""

from __future__ import annotations

import grpc

from domain.errors import PhaseError, RuleError
from projections.projector import Projector
from projections.store import FinishedRound, ViewStore
from service._generated.thirteen.v1 import results_pb2, results_pb2_grpc, table_pb2
from service.application import Thirteen, check_id
from service.errors import Unavailable
from service.rpc import mapping, paging
from service.rpc.runner import Runner, rpc

CATCH_UP_SECONDS = 5.0

Context = grpc.aio.ServicerContext


class ResultsServicer(results_pb2_grpc.ResultsServiceServicer):
    def __init__(
        self, app: Thirteen, store: ViewStore, projector: Projector | None, run: Runner
    ) -> None:
        self.app = app
        self.store = store
        self.projector = projector
        self.run = run

    def _round_result(self, round_id: str) -> FinishedRound:
        """The view's round, waiting (bounded) for the views to reach a round the write side
        has revealed; UNAVAILABLE rather than stale data."""
        check_id(round_id, "round_id")  # before the view: PostgreSQL text cannot hold NUL
        found = self.store.finished_round(round_id)
        if found is None:
            round_ = self.app.round(round_id)  # NOT_FOUND for an unknown round
            if not round_.ended:
                raise PhaseError(f"round {round_id} is not revealed yet", field="round_id")
            target = self.app.max_position()
            if self.projector is None or not self.projector.wait(target, CATCH_UP_SECONDS):
                failing = self.projector is not None and self.projector.failure is not None
                raise Unavailable(
                    f"the results view cannot take in new events (see the server's health and "
                    f"log); round {round_id} is not in it yet"
                    if failing
                    else f"the results view has not caught up with round {round_id} "
                    f"within {CATCH_UP_SECONDS:.0f} s; retry shortly"
                )
            found = self.store.finished_round(round_id)
            assert found is not None
        if found.result is None:
            raise PhaseError(
                f"round {round_id} ended without a showdown (R11.3): no result", field="round_id"
            )
        return found

    @rpc
    async def GetRoundResult(
        self,
        request: results_pb2.GetRoundResultRequest,
        context: Context[results_pb2.GetRoundResultRequest, results_pb2.GetRoundResultResponse],
    ) -> results_pb2.GetRoundResultResponse:
        found = await self.run(self._round_result, request.round_id)
        assert found.result is not None
        return results_pb2.GetRoundResultResponse(
            **mapping.result_fields(found.result), receipt=found.receipt
        )

    @rpc
    async def ListRoundResults(
        self,
        request: results_pb2.ListRoundResultsRequest,
        context: Context[results_pb2.ListRoundResultsRequest, results_pb2.ListRoundResultsResponse],
    ) -> results_pb2.ListRoundResultsResponse:
        after, size = paging.page(f"t:{request.table_id}", request.page_size, request.page_token)
        await self.run(self.app.table, request.table_id)  # NOT_FOUND for an unknown table
        found = await self.run(self.store.table_history, request.table_id, after, size + 1)
        rounds, following = paging.cut(f"t:{request.table_id}", found, size, lambda r: r.number)
        return results_pb2.ListRoundResultsResponse(
            rounds=[self._table_round(r) for r in rounds], next_page_token=following
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
        self,
        request: results_pb2.ListLedgerEntriesRequest,
        context: Context[
            results_pb2.ListLedgerEntriesRequest, results_pb2.ListLedgerEntriesResponse
        ],
    ) -> results_pb2.ListLedgerEntriesResponse:
        after, size = paging.page(f"p:{request.player_id}", request.page_size, request.page_token)
        await self.run(self.app.wallet, request.player_id)  # NOT_FOUND for an unknown player
        found = await self.run(self.store.ledger, request.player_id, after, size + 1)
        entries, following = paging.cut(f"p:{request.player_id}", found, size, lambda e: e.txn_id)
        return results_pb2.ListLedgerEntriesResponse(
            entries=[
                results_pb2.LedgerEntry(
                    entry_id=e.txn_id,
                    amount=e.amount,
                    kind=e.kind,
                    round_id=e.round_id,
                    transfer_id=e.transfer_id,
                    balance_after=e.balance_after,
                    occurred_at=mapping.timestamp(e.at),
                )
                for e in entries
            ],
            next_page_token=following,
        )

    @rpc
    async def GetPlayerStats(
        self,
        request: results_pb2.GetPlayerStatsRequest,
        context: Context[results_pb2.GetPlayerStatsRequest, results_pb2.GetPlayerStatsResponse],
    ) -> results_pb2.GetPlayerStatsResponse:
        await self.run(self.app.wallet, request.player_id)  # NOT_FOUND for an unknown player
        stats = await self.run(self.store.player_stats, request.player_id)
        balance = await self.run(self.store.balance, request.player_id)
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
            balance=balance or 0,
        )

    @rpc
    async def GetLeaderboard(
        self,
        request: results_pb2.GetLeaderboardRequest,
        context: Context[results_pb2.GetLeaderboardRequest, results_pb2.GetLeaderboardResponse],
    ) -> results_pb2.GetLeaderboardResponse:
        if request.limit < 0:
            raise RuleError("limit must not be negative", field="limit")
        limit = min(request.limit or 10, paging.MAX_PAGE_SIZE)
        since = mapping.moment(request.since, "since") if request.HasField("since") else None
        rows = await self.run(self.store.leaderboard, since, limit)
        return results_pb2.GetLeaderboardResponse(
            entries=[
                results_pb2.LeaderboardEntry(rank=i + 1, player_id=p, net_coins=net)
                for i, (p, net, _) in enumerate(rows)
            ]
        )
