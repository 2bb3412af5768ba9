"""A call one replica passes to the table's owner (``service.routing``) carries who made it:
the owner authorizes the original caller, records that caller with the events, and serves the
call itself (a forwarded call is never forwarded again: no loops).

Only a caller trusted to speak for others may say so: a replica, whose certificate's identity
the policy grants the role ``replica``. A server without a policy (plaintext on loopback, or
``--insecure``) authenticates nobody, so there a forwarded call may only say it was made by
``anonymous``, which every call there is; anything else is refused, so that no one can put
another name in the record."""

from __future__ import annotations

from collections.abc import Iterable
from contextvars import ContextVar
from typing import Any

from service.caller import ANONYMOUS
from service.errors import PermissionDenied
from service.security.policy import REPLICA, Policy

FORWARDED = "x-thirteen-forwarded-by"  # the forwarding replica's advertised address
ON_BEHALF = "x-thirteen-on-behalf-of"  # the identity of the caller it forwards

_forwarded_by: ContextVar[str | None] = ContextVar("thirteen_forwarded_by", default=None)

Metadata = Iterable[tuple[str, Any]] | None


def forwarded_by() -> str | None:
    """The replica that forwarded the call running now (None: it was made here)."""
    return _forwarded_by.get()


def headers(identity: str, replica: str) -> tuple[tuple[str, str], ...]:
    """What a replica adds to a call it forwards for ``identity``."""
    return ((FORWARDED, replica), (ON_BEHALF, identity))


def caller_identity(policy: Policy, identity: str | None, metadata: Metadata) -> str | None:
    """The identity a call is made by: its transport's ``identity``, or, for a call a replica
    forwarded, the caller it names (and this call is marked forwarded for the metrics and the
    log). Raises ``PermissionDenied`` for a claim its transport may not make."""
    by = on_behalf = None
    for key, value in metadata or ():
        if key == FORWARDED and isinstance(value, str):
            by = value
        elif key == ON_BEHALF and isinstance(value, str):
            on_behalf = value
    if by is None and on_behalf is None:
        return identity
    if by is None or on_behalf is None:
        raise PermissionDenied(f"a forwarded call names both {FORWARDED} and {ON_BEHALF}")
    if policy.open:
        if identity is not None or on_behalf != ANONYMOUS:
            raise PermissionDenied(
                "this server has no policy: a forwarded call can only be anonymous"
            )
        _forwarded_by.set(by[:256])
        return None
    if identity is None or REPLICA not in policy.roles_of(identity):
        raise PermissionDenied(
            f"only a replica (the role {REPLICA}) may call on behalf of another caller",
            roles=(REPLICA,),
        )
    _forwarded_by.set(by[:256])
    return None if on_behalf == ANONYMOUS else on_behalf
