"""A refusal as the service words it (``service.rpc.status``): a ``google.rpc.Status`` in the
trailers with an ``ErrorInfo`` (the reason, the domain ``thirteen.v1``, what the metadata names:
the field at fault, the missing role …) and, when worth retrying later, a ``RetryInfo``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.rpc import error_details_pb2, status_pb2

DOMAIN = "thirteen.v1"
STATUS_DETAILS = "grpc-status-details-bin"


@dataclass(frozen=True)
class ApiError(Exception):
    """A call that failed: its status code and message and, when the service refused it, the
    ``ErrorInfo`` reason and metadata, the ``RetryInfo`` delay (seconds) and the ``BadRequest``
    field violations."""

    code: grpc.StatusCode
    message: str
    reason: str = ""
    metadata: Mapping[str, str] = field(default_factory=dict)
    retry_after: float | None = None
    field_violations: Mapping[str, str] = field(default_factory=dict)
    """``BadRequest``'s fields at fault, each with what is wrong with it."""

    def __str__(self) -> str:
        reason = f" ({self.reason})" if self.reason and self.reason != self.code.name else ""
        return f"{self.code.name}{reason}: {self.message}"

    @property
    def from_service(self) -> bool:
        """Whether the service itself refused (an ``ErrorInfo`` came back), rather than the
        transport failing (no server, a TLS handshake refused, a deadline)."""
        return bool(self.reason)

    @classmethod
    def of(cls, error: grpc.RpcError) -> ApiError:
        """The error gRPC raised, read."""
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        message = (error.details() if hasattr(error, "details") else "") or ""
        status = _status(error)
        info = error_info(error, status)
        retry_after = None
        fields: dict[str, str] = {}
        for detail in status.details if status is not None else ():
            delay, bad = error_details_pb2.RetryInfo(), error_details_pb2.BadRequest()
            if detail.Unpack(delay):
                retry_after = delay.retry_delay.ToTimedelta().total_seconds()
            elif detail.Unpack(bad):
                fields.update({v.field: v.description for v in bad.field_violations})
        if info is None:
            return cls(code, message, retry_after=retry_after, field_violations=fields)
        return cls(code, message, info.reason, dict(info.metadata), retry_after, fields)


def _status(error: grpc.RpcError) -> status_pb2.Status | None:
    # A failed call is also a grpc.Call (sync) or an AioRpcError; their trailers differ in type.
    trailers: Any = error.trailing_metadata() if hasattr(error, "trailing_metadata") else None
    for key, value in trailers or ():
        if key == STATUS_DETAILS and isinstance(value, bytes):
            try:
                return status_pb2.Status.FromString(value)
            except Exception:  # not a Status: the details of something else
                return None
    return None


def error_info(
    error: grpc.RpcError, status: status_pb2.Status | None = None
) -> error_details_pb2.ErrorInfo | None:
    """The ``ErrorInfo`` of the ``thirteen.v1`` domain the service attached, if any."""
    status = status if status is not None else _status(error)
    for detail in status.details if status is not None else ():
        info = error_details_pb2.ErrorInfo()
        if detail.Unpack(info) and info.domain == DOMAIN:  # False: another kind of detail
            return info
    return None
