"""Errors of the application layer; rule violations come from ``domain.errors``."""

from __future__ import annotations

from domain.errors import RuleError


class NotFound(RuleError):
    """An unknown table, round or player."""


class AlreadyExists(RuleError):
    """An id reused with other content (a transfer, a table, a deal request)."""


class Conflict(RuleError):
    """A concurrency race lost more times than the retry budget allows."""


class Unavailable(RuleError):
    """The service cannot answer now (shutting down, or a read model is behind)."""


class Overloaded(RuleError):
    """The server holds as many calls as it takes at once: retry after ``retry_after`` seconds
    (nothing of the call was done)."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class AccessRefused(RuleError):
    """A caller refused before anything is read or stored; ``roles`` are the roles that would
    be allowed."""

    def __init__(self, message: str, *, roles: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.roles = roles


class Unauthenticated(AccessRefused):
    """A call without an identity (no usable client certificate) where a policy asks for one."""


class PermissionDenied(AccessRefused):
    """An identity without the role a call needs."""


class NotTableDealer(PermissionDenied):
    """A dealer at a table another dealer opened."""


class UnknownWitness(PermissionDenied):
    """A cosignature by no key the server was given as a witness's (``serve --witness-key``)."""


class InvalidCosignature(RuleError):
    """A cosignature that is malformed, does not verify, or is of no checkpoint this log signed."""


class CosignatureTimeRefused(InvalidCosignature):
    """A cosignature whose time is 0 or too far from the log's clock
    (``domain.tlog.checkpoint.cosignature_time_problem``)."""


class NotYetLogged(RuleError):
    """A proof asked of a tree the log has not signed yet, or of an event not in it yet."""
