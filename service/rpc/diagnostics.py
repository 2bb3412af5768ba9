"""``DiagnosticsService``: an echo through the same stack as every command."""

from __future__ import annotations

from service._generated.thirteen.v1 import diagnostics_pb2, diagnostics_pb2_grpc
from service.rpc.runner import Context, Runner, rpc


class DiagnosticsServicer(diagnostics_pb2_grpc.DiagnosticsServiceServicer):
    """Echo through the same stack as every command: wrapper, logging and worker pool."""

    def __init__(self, run: Runner) -> None:
        self.run = run

    @rpc
    async def Echo(
        self, request: diagnostics_pb2.EchoRequest, context: Context
    ) -> diagnostics_pb2.EchoResponse:
        message = await self.run(lambda: request.message)
        return diagnostics_pb2.EchoResponse(message=message)
