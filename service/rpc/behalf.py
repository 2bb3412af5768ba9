"""A call one replica passes to the table's owner (``service.routing``) carries who made it:
the owner authorizes the original caller, records that caller with the events, and serves the
call itself (a forwarded call is never forwarded again: no loops).

Only a caller trusted to speak for others may say so: a replica, whose certificate's identity
the policy grants the role ``replica``. A server without a policy (plaintext on loopback, or
``--insecure``) authenticates nobody, so there a forwarded call may only say it was made by
``anonymous``, which every call there is: anyone may send that, as anyone may call anything
there, and it only keeps the call from being passed on again. Anything else is refused, so that
no one can put another name in the record.

The caller's identity travels UTF-8 encoded in a binary header, so that any identity a
certificate may hold (``Dealer José``) passes unchanged."""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

from service.caller import ANONYMOUS, reserved
from service.errors import PermissionDenied
from service.security.policy import MAX_IDENTITY_LENGTH, REPLICA, Policy

FORWARDED = "x-thirteen-forwarded-by"  # the forwarding replica's advertised address
ON_BEHALF = "x-thirteen-on-behalf-of-bin"  # the identity of the caller it forwards, UTF-8
MAX_ADDRESS = 256

_forwarded_by: ContextVar[str | None] = ContextVar("thirteen_forwarded_by", default=None)
_passed_on: ContextVar[bool] = ContextVar("thirteen_passed_on", default=False)

Metadata = Iterable[tuple[str, Any]] | None


def forwarded_by() -> str | None:
    """The replica that forwarded the call running now (None: it was made here)."""
    return _forwarded_by.get()


def passed_on() -> bool:
    """Whether the call running now was answered by the owner it was passed to: the owner
    counts it in its metrics, so this replica does not (a call is counted once, where it was
    served)."""
    return _passed_on.get()


def mark_passed_on() -> None:
    _passed_on.set(True)


def headers(identity: str, replica: str) -> tuple[tuple[str, str | bytes], ...]:
    """What a replica adds to a call it forwards for ``identity``."""
    return ((FORWARDED, replica), (ON_BEHALF, identity.encode()))


def caller_identity(policy: Policy, identity: str | None, metadata: Metadata) -> str | None:
    """The identity a call is made by: its transport's ``identity``, or, for a call a replica
    forwarded, the caller it names (and this call is marked forwarded for the log). Raises
    ``PermissionDenied`` for a claim its transport may not make, or one no caller could be."""
    by: str | None = None
    named: bytes | None = None
    for key, value in metadata or ():
        if key == FORWARDED and isinstance(value, str):
            by = value
        elif key == ON_BEHALF and isinstance(value, bytes):
            named = value
    if by is None and named is None:
        _forwarded_by.set(None)  # made here, whatever the context this call started from held
        return identity
    if by is None or named is None:
        raise PermissionDenied(f"a forwarded call names both {FORWARDED} and {ON_BEHALF}")
    on_behalf = _identity(named)
    if policy.open:
        if identity is not None or on_behalf != ANONYMOUS:
            raise PermissionDenied(
                "this server has no policy: a forwarded call can only be anonymous"
            )
    elif identity is None or REPLICA not in policy.roles_of(identity):
        raise PermissionDenied(
            f"only a replica (the role {REPLICA}) may call on behalf of another caller",
            roles=(REPLICA,),
        )
    _forwarded_by.set("".join(c for c in by[:MAX_ADDRESS] if c.isprintable()))
    return None if on_behalf == ANONYMOUS else on_behalf


def _identity(named: bytes) -> str:
    """The identity a forwarded call names, if it is one a caller could have."""
    try:
        text = named.decode()
    except UnicodeDecodeError:
        raise PermissionDenied(f"{ON_BEHALF} is not UTF-8") from None
    usable = 0 < len(text) <= MAX_IDENTITY_LENGTH and text.isprintable()
    if not usable or (reserved(text) and text != ANONYMOUS):
        raise PermissionDenied(f"{ON_BEHALF} names no identity a caller could have")
    return text
