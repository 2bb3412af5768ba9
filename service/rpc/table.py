"""``TableService``: tables, seats, rounds from deal to reveal, and live table streams
(R4, R5, R10, R11, R12)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import structlog

from domain import visibility
from domain.errors import RuleError
from domain.ids import round_uuid, table_uuid
from domain.rules.limits import MAX_POSITION
from service import caller
from service._generated.thirteen.v1 import table_pb2 as pb
from service._generated.thirteen.v1 import table_pb2_grpc
from service.application import Thirteen
from service.replies import ArrangeResult, RevealResult, StandUpResult
from service.rpc import mapping
from service.rpc.pages import Pages
from service.rpc.rounds import known_round
from service.rpc.runner import Context, Runner, request_id_of, rpc
from service.rpc.status import to_status
from service.rpc.watch import WatchHub
from service.security.access import viewer_for


class TableServicer(table_pb2_grpc.TableServiceServicer):
    def __init__(self, app: Thirteen, run: Runner, hub: WatchHub, pages: Pages) -> None:
        self.app = app
        self.run = run
        self.hub = hub
        self.pages = pages

    @rpc
    async def OpenTable(
        self, request: pb.OpenTableRequest, context: Context
    ) -> pb.OpenTableResponse:
        rules = mapping.ruleset(
            request.ruleset,
            request.ruleset_parameters if request.HasField("ruleset_parameters") else None,
        )
        return await self.app.perform(
            self.app.open_table,
            request.table_id,
            rules,
            request.request_id,
            present=lambda table: pb.OpenTableResponse(**mapping.table_fields(table)),
        )

    @rpc
    async def GetTable(self, request: pb.GetTableRequest, context: Context) -> pb.GetTableResponse:
        table = await self.run(self.app.table, request.table_id)
        return pb.GetTableResponse(**mapping.table_fields(table))

    @rpc
    async def SitDown(self, request: pb.SitDownRequest, context: Context) -> pb.SitDownResponse:
        return await self.app.perform(
            self.app.sit_down,
            request.table_id,
            request.player_id,
            present=lambda table: pb.SitDownResponse(**mapping.table_fields(table)),
        )

    @rpc
    async def StandUp(self, request: pb.StandUpRequest, context: Context) -> pb.StandUpResponse:
        def present(result: StandUpResult) -> pb.StandUpResponse:
            return pb.StandUpResponse(
                **mapping.table_fields(result.table),
                escaped=result.escaped,
                penalty_transfers=result.transfers,
            )

        return await self.app.perform(
            self.app.stand_up, request.table_id, request.player_id, present=present
        )

    @rpc
    async def ListRounds(
        self, request: pb.ListRoundsRequest, context: Context
    ) -> pb.ListRoundsResponse | bytes:  # bytes: as a reader process encoded it
        # The page is read as of the call from the table listing (projections.listing).
        page: pb.ListRoundsResponse | bytes = await self.pages.of_table(
            "rounds", request, self.app.check_table
        )
        return page

    @rpc
    async def Deal(self, request: pb.DealRequest, context: Context) -> pb.DealResponse:
        return await self.app.perform(
            self.app.deal,
            request.table_id,
            request.client_seed,
            request.request_id,
            dict(request.player_seeds),
            present=lambda r: pb.DealResponse(**mapping.round_fields(r, visibility.DEALER)),
        )

    @rpc
    async def Arrange(self, request: pb.ArrangeRequest, context: Context) -> pb.ArrangeResponse:
        front = mapping.cards(request.front, "front")
        middle = mapping.cards(request.middle, "middle")
        back = mapping.cards(request.back, "back")

        def present(result: ArrangeResult) -> pb.ArrangeResponse:
            submission = result.round.submissions[request.player_id]
            return pb.ArrangeResponse(
                foul=result.foul_reason is not None,
                foul_reason=result.foul_reason or "",
                special=result.special.id if result.special else "",
                round_id=request.round_id,
                player_id=request.player_id,
                ready_to_reveal=not result.round.not_ready(),
                front=submission["front"],
                middle=submission["middle"],
                back=submission["back"],
            )

        return await self.app.perform(
            self.app.arrange,
            request.round_id,
            request.player_id,
            front,
            middle,
            back,
            request.special,
            present=present,
        )

    @rpc
    async def Reveal(self, request: pb.RevealRequest, context: Context) -> pb.RevealResponse:
        def present(result: RevealResult) -> tuple[pb.RevealResponse, RevealResult]:
            return pb.RevealResponse(**mapping.result_fields(result.result)), result

        answer: tuple[pb.RevealResponse, RevealResult] = await self.app.perform(
            self.app.reveal, request.round_id, present=present
        )
        response, result = answer
        response.receipt = result.receipt  # known once the reveal is stored
        return response

    @rpc
    async def GetRound(self, request: pb.GetRoundRequest, context: Context) -> pb.GetRoundResponse:
        viewer = mapping.viewer(request.viewer)
        round_ = await self.run(known_round, self.app, request.round_id)
        who = caller.current()
        if viewer and not who.admin:
            table = await self.run(self.app.table, round_.table_id)
            viewer = viewer_for(who, viewer, table.table_id, table.dealer)
        return pb.GetRoundResponse(**mapping.round_fields(round_, viewer))

    async def WatchTable(
        self, request: pb.WatchTableRequest, context: Context
    ) -> AsyncIterator[pb.WatchTableResponse]:
        """Catch up from the store after ``after``, then follow live; positions only grow."""
        structlog.contextvars.bind_contextvars(request_id=request_id_of(context), rpc="WatchTable")
        try:
            if not 0 <= request.after <= MAX_POSITION:
                raise RuleError(
                    f"after must be a log position from 0 to {MAX_POSITION}", field="after"
                )
            viewer = mapping.viewer(request.viewer)
            table = await self.run(self.app.table, request.table_id)
            viewer = viewer_for(caller.current(), viewer, table.table_id, table.dealer)
        except RuleError as error:
            await context.abort_with_status(to_status(error))
        rounds = [round_uuid(r) for r in table.round_ids]
        watch = self.hub.open(table_uuid(table.table_id), rounds, viewer)
        try:
            # Each batch of the catch-up is a heavy read, queued and paced with the lists.
            async for message in self.hub.follow(watch, request.after, self.run.heavy):
                yield message
            await context.abort(*watch.ending())
        finally:
            self.hub.close(watch)
