"""A real gRPC server on an ephemeral port, on its own event loop thread."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from service._generated.thirteen.v1 import (
    audit_pb2_grpc,
    diagnostics_pb2_grpc,
    results_pb2_grpc,
    table_pb2_grpc,
    transparency_pb2_grpc,
    wallet_pb2_grpc,
)
from service.bootstrap import Running, ServerOnThread
from service.metrics import Metrics
from service.opening import open_app
from service.security.policy import Policy
from service.transparency.keys import LOG_KEY_FILE, load_or_create
from service.transparency.options import LogOptions
from tests.support.clock import ManualClock

if TYPE_CHECKING:
    from service.tracing.spans import Tracing


class ServerThread:
    """Start with ``ServerThread(data, environ, clock)``; ``stop()`` shuts it down gracefully.
    Starting another on the same store is a restart."""

    def __init__(
        self,
        data: Path,
        environ: dict[str, str],
        clock: ManualClock,
        *,
        credentials: grpc.ServerCredentials | None = None,
        policy: Policy | None = None,
        channel_credentials: grpc.ChannelCredentials | None = None,
        transparency: LogOptions | None = None,
        metrics: bool = False,
        tracing: Tracing | None = None,
    ) -> None:
        self.clock = clock
        # With ``metrics``, Prometheus metrics on an ephemeral port, at ``metrics_url``.
        self.metrics = Metrics() if metrics else None
        self.metrics_url = ""
        if self.metrics is not None:
            self.metrics_url = f"http://{self.metrics.listen('127.0.0.1:0')}/metrics"
        # The log key lives beside the store, so a restart signs with the same key; the
        # checkpoints come quickly, so that tests need not wait for the default interval.
        self.log_key = load_or_create(data / LOG_KEY_FILE)[0]
        transparency = transparency or LogOptions(self.log_key, checkpoint_interval=0.2)
        try:
            self.app = open_app(data, clock=clock, environ=environ)
            self.served = ServerOnThread(
                self.app,
                sweep_interval=0.05,
                poll_interval=0.05,
                credentials=credentials,
                policy=policy,
                transparency=transparency,
                metrics=self.metrics,
                tracing=tracing,
            )
        except BaseException:
            if self.metrics is not None:  # listening since before the start that failed
                self.metrics.close()
            raise
        self.running: Running = self.served.running
        self.loop, self.thread = self.served.loop, self.served.thread
        self.address = f"127.0.0.1:{self.running.port}"
        self.channel = (
            grpc.insecure_channel(self.address)
            if channel_credentials is None
            else grpc.secure_channel(self.address, channel_credentials)
        )
        self._stubs(self.channel)

    def _stubs(self, channel: grpc.Channel) -> None:
        self.wallets = wallet_pb2_grpc.WalletServiceStub(channel)
        self.tables = table_pb2_grpc.TableServiceStub(channel)
        self.diagnostics = diagnostics_pb2_grpc.DiagnosticsServiceStub(channel)
        self.results = results_pb2_grpc.ResultsServiceStub(channel)
        self.audit = audit_pb2_grpc.AuditServiceStub(channel)
        self.transparency = transparency_pb2_grpc.TransparencyServiceStub(channel)

    def client(self, credentials: grpc.ChannelCredentials) -> ServerThread:
        """This server as seen by another client (its own channel and credentials); the
        helpers of ``tests.e2e.helpers`` take it like the server itself. ``stop()`` on it
        closes only its channel."""
        other = copy.copy(self)
        other.channel = grpc.secure_channel(self.address, credentials)
        other._stubs(other.channel)
        other._client = True
        return other

    def _call(self, coroutine: Any) -> Any:
        return self.served.call(coroutine, timeout=30)

    _client = False

    def stop(self) -> None:
        if self._client:
            self.channel.close()
            return
        if not self.thread.is_alive():
            return
        self.channel.close()
        self.served.stop(grace=1)
