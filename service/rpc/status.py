"""One place that turns an exception into a gRPC status with rich details (google.rpc).

Every text of a status is clipped (``clip``): gRPC sends the message and the details as
trailing metadata, and a client refuses metadata over 8–16 KiB (RESOURCE_EXHAUSTED instead of
the refusal). Messages quote a caller's input only in part (``domain.errors.quoted``); the clip
is the last line of defence for one that does not.
"""

from __future__ import annotations

from datetime import timedelta
from typing import NamedTuple, cast

import grpc
from google.protobuf import any_pb2, duration_pb2
from google.protobuf.message import Message

# googleapis-common-protos ships .pyi files but no py.typed: pyproject has mypy read them
from google.rpc import (
    code_pb2,
    error_details_pb2,
    status_pb2,
)
from grpc_status import rpc_status

from domain.errors import (
    ArrangementError,
    CardError,
    DeclarationRefused,
    PhaseError,
    RuleError,
    RulesetError,
    SeatError,
    SpecialError,
    StakeError,
)
from domain.fairness.seeds import SeedKeyMissing
from domain.rules.limits import LimitReached
from domain.wallet import InsufficientFunds
from service.errors import (
    AccessRefused,
    AlreadyExists,
    Conflict,
    CosignatureTimeRefused,
    InvalidCosignature,
    NotFound,
    NotTableDealer,
    NotYetLogged,
    Overloaded,
    PermissionDenied,
    Unauthenticated,
    Unavailable,
    UnknownWitness,
)

DOMAIN = "thirteen.v1"
MAX_MESSAGE_CHARS = 300
MAX_MESSAGE_BYTES = 900  # UTF-8; percent-encoded in grpc-message, base64 in the details
MAX_FIELD_CHARS = 100

# (exception class, status code, ErrorInfo reason), most specific first.
_CODES: list[tuple[type[RuleError], grpc.StatusCode, str]] = [
    (Unauthenticated, grpc.StatusCode.UNAUTHENTICATED, "UNAUTHENTICATED"),
    (NotTableDealer, grpc.StatusCode.PERMISSION_DENIED, "NOT_TABLE_DEALER"),
    (UnknownWitness, grpc.StatusCode.PERMISSION_DENIED, "UNKNOWN_WITNESS_KEY"),
    (PermissionDenied, grpc.StatusCode.PERMISSION_DENIED, "ROLE_REQUIRED"),
    (NotFound, grpc.StatusCode.NOT_FOUND, "NOT_FOUND"),
    (AlreadyExists, grpc.StatusCode.ALREADY_EXISTS, "ALREADY_EXISTS"),
    (Conflict, grpc.StatusCode.ABORTED, "CONCURRENT_UPDATE"),
    (Unavailable, grpc.StatusCode.UNAVAILABLE, "UNAVAILABLE"),
    (Overloaded, grpc.StatusCode.RESOURCE_EXHAUSTED, "OVERLOADED"),
    (DeclarationRefused, grpc.StatusCode.FAILED_PRECONDITION, "SPECIAL_NOT_HELD"),
    (SeedKeyMissing, grpc.StatusCode.FAILED_PRECONDITION, "SEED_KEY_MISSING"),
    (PhaseError, grpc.StatusCode.FAILED_PRECONDITION, "WRONG_PHASE"),
    (SeatError, grpc.StatusCode.FAILED_PRECONDITION, "SEAT_RULE"),
    (StakeError, grpc.StatusCode.FAILED_PRECONDITION, "INSUFFICIENT_STAKE"),
    (InsufficientFunds, grpc.StatusCode.FAILED_PRECONDITION, "INSUFFICIENT_FUNDS"),
    (LimitReached, grpc.StatusCode.FAILED_PRECONDITION, "LIMIT_REACHED"),
    (NotYetLogged, grpc.StatusCode.FAILED_PRECONDITION, "NOT_YET_LOGGED"),
    (CosignatureTimeRefused, grpc.StatusCode.INVALID_ARGUMENT, "COSIGNATURE_TIME"),
    (InvalidCosignature, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_COSIGNATURE"),
    (CardError, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_CARD"),
    (ArrangementError, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARRANGEMENT"),
    (SpecialError, grpc.StatusCode.INVALID_ARGUMENT, "UNKNOWN_SPECIAL"),
    (RulesetError, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_RULESET"),
    (RuleError, grpc.StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"),
]


def classify(error: RuleError) -> tuple[grpc.StatusCode, str]:
    for cls, code, reason in _CODES:
        if isinstance(error, cls):
            return code, reason
    raise AssertionError("RuleError is the last entry")


def clip(text: str, chars: int = MAX_MESSAGE_CHARS, size: int = MAX_MESSAGE_BYTES) -> str:
    """``text`` cut to ``chars`` characters and ``size`` UTF-8 bytes, ending in '…' if cut.

    >>> clip("x" * 1000)[-3:], len(clip("x" * 1000)), clip("short")
    ('xx…', 300, 'short')
    >>> len(clip("水" * 300).encode()) <= MAX_MESSAGE_BYTES
    True
    """
    if len(text) <= chars and len(text.encode()) <= size:
        return text
    cut = text[: chars - 1].encode()[: size - 3]  # room for the 3-byte ellipsis
    return cut.decode(errors="ignore") + "…"


def _pack(message: Message) -> any_pb2.Any:
    packed = any_pb2.Any()
    packed.Pack(message)
    return packed


def to_status(error: RuleError, metadata: dict[str, str] | None = None) -> grpc.Status:
    """The status for a refused command: ErrorInfo always (naming the roles that would be
    allowed, for a refused caller), plus BadRequest field violations for malformed input or
    PreconditionFailure for a rule or phase."""
    code, reason = classify(error)
    message, field = clip(error.message), clip(error.field, MAX_FIELD_CHARS)
    metadata = dict(metadata or {})
    if isinstance(error, AccessRefused) and error.roles:
        metadata["missing_role"] = error.roles[0]
        metadata["allowed_roles"] = ",".join(error.roles)
    info = {clip(k, MAX_FIELD_CHARS): clip(v) for k, v in metadata.items()}
    details = [_pack(error_details_pb2.ErrorInfo(reason=reason, domain=DOMAIN, metadata=info))]
    if code == grpc.StatusCode.INVALID_ARGUMENT:
        violation = error_details_pb2.BadRequest.FieldViolation(field=field, description=message)
        details.append(_pack(error_details_pb2.BadRequest(field_violations=[violation])))
    elif code == grpc.StatusCode.FAILED_PRECONDITION:
        failed = error_details_pb2.PreconditionFailure.Violation(
            type=reason, subject=field, description=message
        )
        details.append(_pack(error_details_pb2.PreconditionFailure(violations=[failed])))
    if isinstance(error, Overloaded):  # when to try again (AIP-193: RetryInfo)
        delay = duration_pb2.Duration()
        delay.FromTimedelta(timedelta(seconds=error.retry_after))
        details.append(_pack(error_details_pb2.RetryInfo(retry_delay=delay)))
    status = status_pb2.Status(code=getattr(code_pb2, code.name), message=message, details=details)
    made = rpc_status.to_status(status)
    if isinstance(error, Overloaded):  # the same delay where gRPC's own retries look for it
        pushback = (PUSHBACK, str(max(1, round(error.retry_after * 1000))))
        return cast(
            grpc.Status, _Status(made.code, made.details, (*made.trailing_metadata, pushback))
        )
    return made


PUSHBACK = "grpc-retry-pushback-ms"
"""The trailer a gRPC client's retry policy waits for before it sends a call again (gRPC's
retry design, A6), instead of its own backoff."""


class _Status(NamedTuple):
    code: grpc.StatusCode
    details: str
    trailing_metadata: tuple[tuple[str, str | bytes], ...]


grpc.Status.register(_Status)


def internal_status() -> grpc.Status:
    status = status_pb2.Status(
        code=code_pb2.INTERNAL,
        message="internal error; it has been logged",
        details=[_pack(error_details_pb2.ErrorInfo(reason="INTERNAL", domain=DOMAIN))],
    )
    return rpc_status.to_status(status)
