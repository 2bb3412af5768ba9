"""Who causes a command: the caller's identity and roles, set by the gRPC adapter for each call
(``service.rpc.authorizing``) and carried to the writer with the command, which records the identity
on every event the command stores (``service.eventstore.writer``). In-process callers (tools, tests)
are the process itself; the deadline sweeper names itself (``service.sweeper``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

ADMIN = "admin"
CALLER_FIELD = "caller"  # the attribute, and the stored event's state key, naming the caller
UNKNOWN = "unknown"  # how an event stored before callers were recorded reads


@dataclass(frozen=True)
class Caller:
    """An authenticated identity (a certificate's URI SAN, DNS SAN or CN, or a name the service
    gives itself) and the roles the policy grants it."""

    identity: str
    roles: frozenset[str]

    def has(self, role: str) -> bool:
        """``admin`` holds every role."""
        return role in self.roles or ADMIN in self.roles

    @property
    def admin(self) -> bool:
        return ADMIN in self.roles


ANONYMOUS = "anonymous"  # a caller without an identity, on a server without a policy
SERVICE_PREFIX = "thirteen:"  # the names the service gives itself
IN_PROCESS = Caller(SERVICE_PREFIX + "in-process", frozenset({ADMIN}))
SWEEPER = Caller(SERVICE_PREFIX + "sweeper", frozenset({ADMIN}))


def reserved(identity: str) -> bool:
    """Names no certificate or policy may claim: they would pass for the service itself, or
    for the callers of a server without a policy, in the record and in table bindings."""
    return identity == ANONYMOUS or identity.startswith(SERVICE_PREFIX)


_current: ContextVar[Caller] = ContextVar("thirteen_caller", default=IN_PROCESS)


def current() -> Caller:
    """The caller of the command or query running now."""
    return _current.get()


@contextmanager
def acting_as(caller: Caller) -> Iterator[None]:
    """Run the block as ``caller`` (the sweeper, a test)."""
    token = _current.set(caller)
    try:
        yield
    finally:
        _current.reset(token)


def set_current(caller: Caller) -> None:
    """For the gRPC adapter: the rest of this call (its task's context) runs as ``caller``."""
    _current.set(caller)


def recorded(event: object) -> str:
    """The identity recorded with a stored event; ``unknown`` for one stored before callers
    were recorded."""
    return str(getattr(event, CALLER_FIELD, UNKNOWN) or UNKNOWN)
