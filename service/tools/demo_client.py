"""The demo's bots as clients of the public API (``service.client``)."""

from __future__ import annotations

from typing import Any

import grpc

from service.client import ApiError, connect

CALL_TIMEOUT = 10.0  # seconds; every call of the demo is answered in milliseconds


class DemoFailed(Exception):
    """The demo cannot go on; the message is the one line for stderr."""


class Api:
    """The public stubs; each call has a deadline, and a failed call becomes one readable line."""

    def __init__(self, address: str, credentials: grpc.ChannelCredentials | None = None) -> None:
        self.address = address
        self.tls = credentials is not None
        self.client = connect(address, tls=credentials)

    def wallet(self, method: str, request: Any) -> Any:
        return self._call(getattr(self.client.wallets, method), method, request)

    def table(self, method: str, request: Any) -> Any:
        return self._call(getattr(self.client.tables, method), method, request)

    def _call(self, stub_method: Any, method: str, request: Any) -> Any:
        try:
            return self.client.call(stub_method, request, timeout=CALL_TIMEOUT)
        except ApiError as error:
            raise DemoFailed(self._explain(method, error)) from None

    def _explain(self, method: str, error: ApiError) -> str:
        code, details = error.code, error.message
        if code == grpc.StatusCode.UNAVAILABLE and not self.tls and speaks_tls(self.address):
            return (
                f"the server at {self.address} serves TLS and the demo spoke plaintext: give "
                "--ca (the CA that signed the server's certificate), and --cert and --key when it "
                "asks for a client certificate (mutual TLS)"
            )
        if code == grpc.StatusCode.UNAVAILABLE:
            # A refused TLS handshake reaches the client as a closed socket, nothing more.
            tls = (
                "; over TLS the handshake fails too when the server serves plaintext, does not"
                " trust --cert (mutual TLS: signed by its --client-ca, not expired) or has a"
                " certificate --ca did not sign"
                if self.tls
                else ""
            )
            return (
                f"cannot reach a thirteen server at {self.address} ({details.split(';')[0]});"
                " is `thirteen serve` (or `make run`) running there? Without --address the demo"
                f" starts a server of its own{tls}"
            )
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            return f"the server at {self.address} did not answer {method} in {CALL_TIMEOUT:g} s"
        return f"the server refused {method}: {error}"

    def close(self) -> None:
        self.client.close()


def speaks_tls(address: str, timeout: float = 3.0) -> bool:
    """Whether whatever listens at ``address`` completes a TLS handshake (its certificate not
    checked: only the protocol is asked). A plaintext gRPC server answers a ClientHello with an
    HTTP/2 frame, which no handshake completes with."""
    import socket
    import ssl

    host, _, port = address.rpartition(":")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    try:
        with (
            socket.create_connection((host.strip("[]"), int(port)), timeout=timeout) as raw,
            context.wrap_socket(raw, server_hostname=None),
        ):
            return True
    except (OSError, ValueError):  # ssl.SSLError is an OSError
        return False
