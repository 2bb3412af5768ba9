"""``service.client``: the service's refusals read back with their ``ErrorInfo``, TLS, and calls
answered ``UNAVAILABLE`` or ``ABORTED`` sent again with a backoff (issue 23)."""

from __future__ import annotations

import threading
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from service._generated.thirteen.v1 import diagnostics_pb2, wallet_pb2
from service.client import ApiError, connect
from tests.support.certs import Authority
from tests.support.clock import ManualClock
from tests.support.server import ServerThread


def test_a_refusal_comes_back_with_its_error_info(server: ServerThread) -> None:
    with connect(server.address) as client, pytest.raises(ApiError) as refused:
        client.call(client.wallets.GetBalance, wallet_pb2.GetBalanceRequest(player_id="nobody"))
    assert refused.value.code == grpc.StatusCode.NOT_FOUND
    assert refused.value.reason == "NOT_FOUND" and refused.value.from_service
    assert "nobody" in refused.value.message
    with connect(server.address) as client, pytest.raises(ApiError) as bad:
        client.call(client.wallets.GetBalance, wallet_pb2.GetBalanceRequest(player_id=""))
    assert bad.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "player_id" in bad.value.field_violations


def test_it_calls_over_tls_trusting_the_ca_given(
    store: dict[str, str], tmp_path: Path, clock: ManualClock
) -> None:
    authority = Authority(tmp_path / "certs")
    issued = authority.issue("server", dns="localhost", server=True)
    served = ServerThread(
        tmp_path / "data",
        store,
        clock,
        credentials=grpc.ssl_server_credentials([issued.pair()]),
    )
    try:
        with connect(served.address, ca=authority.ca, server_name="localhost") as client:
            answer = client.call(client.diagnostics.Echo, diagnostics_pb2.EchoRequest(message="t"))
        assert answer.message == "t"
        with connect(served.address) as plaintext, pytest.raises(ApiError) as refused:
            plaintext.call(plaintext.diagnostics.Echo, diagnostics_pb2.EchoRequest(message="x"))
        assert refused.value.code == grpc.StatusCode.UNAVAILABLE
        assert not refused.value.from_service
    finally:
        served.stop()


class Flaky(grpc.GenericRpcHandler):
    """``DiagnosticsService/Echo`` answering ``code`` to the first ``failures`` calls."""

    def __init__(self, code: grpc.StatusCode, failures: int) -> None:
        self.code, self.failures, self.calls = code, failures, 0
        self.lock = threading.Lock()

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[Any, Any] | None:
        if details.method != "/thirteen.v1.DiagnosticsService/Echo":
            return None
        return grpc.unary_unary_rpc_method_handler(
            self.echo,
            request_deserializer=diagnostics_pb2.EchoRequest.FromString,
            response_serializer=diagnostics_pb2.EchoResponse.SerializeToString,
        )

    def echo(self, request: Any, context: grpc.ServicerContext) -> Any:
        with self.lock:
            self.calls += 1
            failing = self.calls <= self.failures
        if failing:
            if self.code == grpc.StatusCode.RESOURCE_EXHAUSTED:  # as a shedding server asks
                context.set_trailing_metadata((("grpc-retry-pushback-ms", "20"),))
            context.abort(self.code, f"call {self.calls} fails")
        return diagnostics_pb2.EchoResponse(message=request.message)


@pytest.mark.parametrize(
    "code",
    [grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.ABORTED, grpc.StatusCode.RESOURCE_EXHAUSTED],
)
def test_retryable_codes_are_retried_until_an_answer(code: grpc.StatusCode) -> None:
    """A server restarting or shedding a burst, a command losing a race: sent again (issue 22's
    shed calls included, after the delay the server asks for)."""
    flaky = Flaky(code, failures=3)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[flaky])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with connect(f"127.0.0.1:{port}") as client:
            answer = client.call(
                client.diagnostics.Echo, diagnostics_pb2.EchoRequest(message="hi"), timeout=60
            )
        assert answer.message == "hi"
        assert flaky.calls == 4
        with connect(f"127.0.0.1:{port}", retries=False) as client:
            flaky.calls, flaky.failures = 0, 1
            with pytest.raises(ApiError) as failed:
                client.call(client.diagnostics.Echo, diagnostics_pb2.EchoRequest(message="x"))
        assert failed.value.code == code and flaky.calls == 1
    finally:
        server.stop(None)


def test_other_codes_are_not_retried() -> None:
    flaky = Flaky(grpc.StatusCode.INVALID_ARGUMENT, failures=1)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2), handlers=[flaky])
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        with connect(f"127.0.0.1:{port}") as client, pytest.raises(ApiError) as failed:
            client.call(client.diagnostics.Echo, diagnostics_pb2.EchoRequest(message="x"))
        assert failed.value.code == grpc.StatusCode.INVALID_ARGUMENT and flaky.calls == 1
    finally:
        server.stop(None)
