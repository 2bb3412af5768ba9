"""Deterministic aggregate ids: the same name always gives the same id, so lookups need no
index and a retried command finds what its first attempt created."""

from __future__ import annotations

from functools import lru_cache
from uuid import UUID, uuid5

NAMESPACE = UUID("5d0f2b8e-6a44-4c1e-9b1e-13a5e7c0d013")
CACHED = 1 << 14  # ids remembered per kind: every command looks up a few, over and over


@lru_cache(maxsize=CACHED)
def table_uuid(table_id: str) -> UUID:
    return uuid5(NAMESPACE, f"table:{table_id}")


@lru_cache(maxsize=CACHED)
def wallet_uuid(player_id: str) -> UUID:
    return uuid5(NAMESPACE, f"wallet:{player_id}")


@lru_cache(maxsize=CACHED)
def transfer_uuid(transfer_id: str) -> UUID:
    return uuid5(NAMESPACE, f"transfer:{transfer_id}")


@lru_cache(maxsize=CACHED)
def round_uuid(round_id: str) -> UUID:
    return uuid5(NAMESPACE, f"round:{round_id}")


def deal_round_id(table_id: str, request_id: str) -> str:
    """The round id a deal with this request id creates, so that a retried deal finds it."""
    return str(uuid5(NAMESPACE, f"deal:{table_id}:{request_id}"))
