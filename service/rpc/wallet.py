"""``WalletService``: coins in and out, and balances (R8, R9, R10.6)."""

from __future__ import annotations

import grpc

from service._generated.thirteen.v1 import wallet_pb2, wallet_pb2_grpc
from service.application import Thirteen
from service.rpc.runner import Runner, rpc

Context = grpc.aio.ServicerContext


class WalletServicer(wallet_pb2_grpc.WalletServiceServicer):
    def __init__(self, app: Thirteen, run: Runner) -> None:
        self.app = app
        self.run = run

    @rpc
    async def Credit(
        self,
        request: wallet_pb2.CreditRequest,
        context: Context[wallet_pb2.CreditRequest, wallet_pb2.CreditResponse],
    ) -> wallet_pb2.CreditResponse:
        return await self.app.perform(
            self.app.credit,
            request.player_id,
            request.amount,
            request.transfer_id,
            present=lambda b: wallet_pb2.CreditResponse(player_id=b.player_id, balance=b.balance),
        )

    @rpc
    async def Debit(
        self,
        request: wallet_pb2.DebitRequest,
        context: Context[wallet_pb2.DebitRequest, wallet_pb2.DebitResponse],
    ) -> wallet_pb2.DebitResponse:
        return await self.app.perform(
            self.app.debit,
            request.player_id,
            request.amount,
            request.transfer_id,
            present=lambda b: wallet_pb2.DebitResponse(player_id=b.player_id, balance=b.balance),
        )

    @rpc
    async def GetBalance(
        self,
        request: wallet_pb2.GetBalanceRequest,
        context: Context[wallet_pb2.GetBalanceRequest, wallet_pb2.GetBalanceResponse],
    ) -> wallet_pb2.GetBalanceResponse:
        wallet = await self.run(self.app.wallet, request.player_id)
        return wallet_pb2.GetBalanceResponse(
            player_id=wallet.player_id,
            balance=wallet.balance,
            table_id=wallet.table_id or "",
            round_id=wallet.round_id or "",
        )
