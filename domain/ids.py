"""Deterministic aggregate ids: the same name always gives the same id, so lookups need no
index and a retried command finds what its first attempt created."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from uuid import UUID, uuid5

from domain.errors import RuleError

NAMESPACE = UUID("5d0f2b8e-6a44-4c1e-9b1e-13a5e7c0d013")
CACHED = 2048  # ids remembered per kind (about 300 bytes each): every command looks up a few
MAX_ID_LENGTH = 128


def check_id(value: str, field: str) -> str:
    """``value`` if it can be an id (of ``field``): not blank, printable, at most
    ``MAX_ID_LENGTH`` characters; else ``RuleError`` naming ``field``.

    >>> check_id("table-1", "table_id")
    'table-1'
    >>> check_id("a\\nb", "player_id")
    Traceback (most recent call last):
    ...
    domain.errors.RuleError: player_id must be printable and at most 128 characters
    >>> check_id(" ", "round_id")
    Traceback (most recent call last):
    ...
    domain.errors.RuleError: round_id is required
    """
    if not isinstance(value, str) or not value.strip():
        raise RuleError(f"{field} is required", field=field)
    if len(value) > MAX_ID_LENGTH or not value.isprintable():
        raise RuleError(
            f"{field} must be printable and at most {MAX_ID_LENGTH} characters", field=field
        )
    return value


def _named(kind: str) -> Callable[[str], UUID]:
    """The id of the aggregate of ``kind`` named ``name``: ``uuid5(NAMESPACE, "kind:name")``."""

    @lru_cache(maxsize=CACHED)
    def aggregate_uuid(name: str) -> UUID:
        return uuid5(NAMESPACE, f"{kind}:{name}")

    aggregate_uuid.__name__ = aggregate_uuid.__qualname__ = f"{kind}_uuid"
    return aggregate_uuid


table_uuid = _named("table")
wallet_uuid = _named("wallet")
transfer_uuid = _named("transfer")
round_uuid = _named("round")


def deal_round_id(table_id: str, request_id: str) -> str:
    """The round id a deal with this request id creates, so that a retried deal finds it."""
    return str(uuid5(NAMESPACE, f"deal:{table_id}:{request_id}"))
