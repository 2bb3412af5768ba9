"""``WalletService``: coins in and out, and balances (R8, R9, R10.6)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from service._generated.thirteen.v1 import wallet_pb2, wallet_pb2_grpc
from service.application import Thirteen
from service.replies import Balance
from service.rpc.runner import Context, Runner, rpc

R = TypeVar("R")


class WalletServicer(wallet_pb2_grpc.WalletServiceServicer):
    def __init__(self, app: Thirteen, run: Runner) -> None:
        self.app = app
        self.run = run

    @rpc
    async def Credit(
        self, request: wallet_pb2.CreditRequest, context: Context
    ) -> wallet_pb2.CreditResponse:
        return await self._transfer(self.app.credit, request, wallet_pb2.CreditResponse)

    @rpc
    async def Debit(
        self, request: wallet_pb2.DebitRequest, context: Context
    ) -> wallet_pb2.DebitResponse:
        return await self._transfer(self.app.debit, request, wallet_pb2.DebitResponse)

    async def _transfer(
        self,
        command: Callable[[str, int, str], Balance],
        request: wallet_pb2.CreditRequest | wallet_pb2.DebitRequest,
        answer: Callable[..., R],
    ) -> R:
        """A credit or a debit, answered with the balance it left."""
        return await self.app.perform(
            command,
            request.player_id,
            request.amount,
            request.transfer_id,
            present=lambda b: answer(player_id=b.player_id, balance=b.balance),
        )

    @rpc
    async def GetBalance(
        self, request: wallet_pb2.GetBalanceRequest, context: Context
    ) -> wallet_pb2.GetBalanceResponse:
        wallet = await self.run(self.app.wallet, request.player_id)
        return wallet_pb2.GetBalanceResponse(
            player_id=wallet.player_id,
            balance=wallet.balance,
            table_id=wallet.table_id or "",
            round_id=wallet.round_id or "",
        )
