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


class Unauthenticated(RuleError):
    """A call without an identity (no verified client certificate) where a policy asks for
    one."""

    def __init__(self, message: str, *, roles: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.roles = roles


class PermissionDenied(RuleError):
    """An identity without the role a call needs, or a dealer at another dealer's table;
    ``roles`` are the roles that would be allowed."""

    def __init__(self, message: str, *, roles: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.roles = roles
