"""What authorization costs a call (issue 11): the caller's identity read from its client
certificate and its roles checked against the policy, as ``service.rpc.authorizing`` does on
every RPC,
beside the same call on a server without a policy. Printed against the server's CPU per command
measured by the service section in the same run."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc

from service.rpc.authorizing import admit
from service.security.policy import Policy
from tests.support.certs import Authority

CALLS = 50_000
DEALER = "spiffe://thirteen.dev/dealer"
TARGET_SHARE = 0.05  # of the server's CPU per command


class _Plain:
    """A plaintext call's context, as ``identity_of`` reads it."""

    def auth_context(self) -> dict[str, list[bytes]]:
        return {}

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("x-request-id", "bench"),)


def _loop(policy: Policy, context: Any) -> float:
    """CPU seconds per ``admit`` (thread CPU time: the machine's other work is not counted)."""
    for _ in range(1000):  # warm the certificate cache
        admit(policy, context, "Deal")
    started = time.thread_time()
    for _ in range(CALLS):
        admit(policy, context, "Deal")
    return (time.thread_time() - started) / CALLS


async def _in_a_real_call(directory: Path, policy: Policy) -> float:
    """``authorize`` timed inside the handler of a real mutual-TLS call, so gRPC's own
    ``auth_context()`` is part of the figure."""
    ca = Authority(directory)
    server_pair, dealer = ca.issue("server", server=True).pair(), ca.issue("dealer", uri=DEALER)
    trust = ca.ca.read_bytes()

    async def measure(request: bytes, context: grpc.aio.ServicerContext[bytes, bytes]) -> bytes:
        return repr(_loop(policy, context)).encode()

    server = grpc.aio.server()
    server.add_generic_rpc_handlers(
        [
            grpc.method_handlers_generic_handler(
                "bench.Access", {"Measure": grpc.unary_unary_rpc_method_handler(measure)}
            )
        ]
    )
    port = server.add_secure_port(
        "127.0.0.1:0",
        grpc.ssl_server_credentials(
            [server_pair], root_certificates=trust, require_client_auth=True
        ),
    )
    await server.start()
    try:
        credentials = grpc.ssl_channel_credentials(trust, *dealer.pair())
        async with grpc.aio.secure_channel(f"127.0.0.1:{port}", credentials) as channel:
            call: grpc.aio.UnaryUnaryMultiCallable[bytes, bytes]
            call = channel.unary_unary("/bench.Access/Measure")  # no serializers: bytes
            answer = await call(b"", timeout=120)
        return float(answer)
    finally:
        await server.stop(None)


def cost() -> tuple[float, float]:
    """Microseconds per call: with a policy and a client certificate, and with no policy."""
    with tempfile.TemporaryDirectory() as directory:
        policy = Policy.parse(f'[identities]\n"{DEALER}" = ["dealer"]\n')
        secured = asyncio.run(_in_a_real_call(Path(directory), policy))
        open_ = _loop(Policy.everyone_admin(), _Plain())
    return secured * 1e6, open_ * 1e6


def line(server_us_per_command: float) -> str:
    secured, open_ = cost()
    share = secured / server_us_per_command
    verdict = "met" if share <= TARGET_SHARE else "MISSED"
    return (
        f"  authorization per call  {secured:5.1f} us with mutual TLS and a policy "
        f"({open_:4.1f} us without a policy) = {share:5.1%} of the server's "
        f"{server_us_per_command:,.0f} us CPU per command (target <= {TARGET_SHARE:.0%}: {verdict})"
    )
