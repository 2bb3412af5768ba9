"""Which replica owns a table: rendezvous (highest random weight) hashing over the live
replicas. Every replica that sees the same live set computes the same owner without talking to
the others, and a replica joining or leaving moves only the tables it wins or held."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable


def weight(replica: str, table_id: str) -> int:
    """The replica's draw for the table: a hash, the same in every process."""
    digest = hashlib.blake2b(f"{replica}\0{table_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def owner(table_id: str, replicas: Iterable[str]) -> str | None:
    """The replica with the highest draw for ``table_id`` (None when there is none).

    >>> replicas = ["10.0.0.1:50051", "10.0.0.2:50051", "10.0.0.3:50051"]
    >>> owner("t1", replicas) == owner("t1", reversed(replicas))
    True
    >>> gone = owner("t1", replicas)
    >>> owner("t1", [r for r in replicas if r != gone]) != gone
    True
    """
    return max(replicas, key=lambda replica: (weight(replica, table_id), replica), default=None)
