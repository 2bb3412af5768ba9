"""Where a round's server seed comes from (R12.1) without the seed ever being stored before its
reveal: it is derived from a seed key held outside the event store.

The seed of round ``number`` of table ``table_id`` is HMAC-SHA256(key, message), where the
message is the domain label ``thirteen/server-seed/v1``, the table id (UTF-8), the round number
(8 bytes, big-endian) and a random ``nonce``, each preceded by its length (4 bytes, big-endian),
so no two different inputs give the same message. The table records the key's id and the nonce
with the commitment it publishes; both are public. The nonce keeps the seeds of two tables
distinct even when one table id is used again (another store given the same key, a store
restored from a backup): without it those tables would deal the same seeds in the same rounds.

The derived seed is used exactly as R12 says (it is 32 bytes like a drawn one): its commitment
is published before the deal, the seed at the reveal, so audits need no key. It comes from the
cryptographic source R12.1 asks for: HMAC-SHA256 keyed with 32 random secret bytes is a
pseudorandom function, and each commitment takes a fresh random nonce, so a seed is as
unpredictable as a drawn one to anyone without the key, and the service commits to it before it
can know the round's client seed, as before (issue 11 moved the draw from the event store to the
key file).

>>> key = bytes(32)
>>> derive_seed(key, "t", 1, bytes(16)).hex()
'c8dbcb16bb659d108c88a7dba72a27a96a6b7307513e658aaf1ec7d365cc4561'
>>> key_id(key)
'51b8bd9b720a8e4f'
>>> ring = KeyRing.of([key])
>>> ring.current == key_id(key) and ring.key(ring.current) == key
True
>>> ring
KeyRing(current='51b8bd9b720a8e4f', ids=('51b8bd9b720a8e4f',))
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from domain.errors import PhaseError
from domain.fairness.shuffle import SEED_BYTES, commitment

KEY_BYTES = 32
NONCE_BYTES = 16
SEED_LABEL = b"thirteen/server-seed/v1"
KEY_ID_LABEL = b"thirteen seed key id"


class SeedKeyMissing(PhaseError):
    """The seed a table committed to was derived from a key the service does not hold (its
    key file lacks that key id), so the round cannot be dealt, revealed or ended yet."""


def _framed(part: bytes) -> bytes:
    return len(part).to_bytes(4, "big") + part


def derive_seed(key: bytes, table_id: str, number: int, nonce: bytes) -> bytes:
    """R12.1: the 32-byte server seed of round ``number`` (1, 2, …) of ``table_id`` under
    ``key``, with the table's published ``nonce`` (see the module's docstring)."""
    if len(key) != KEY_BYTES:
        raise ValueError(f"a seed key is {KEY_BYTES} bytes, got {len(key)}")
    message = b"".join(
        _framed(part) for part in (SEED_LABEL, table_id.encode(), number.to_bytes(8, "big"), nonce)
    )
    seed = hmac.new(key, message, hashlib.sha256).digest()
    assert len(seed) == SEED_BYTES
    return seed


def key_id(key: bytes) -> str:
    """A key's public fingerprint: the first 16 hex digits of SHA-256(label || key). It names
    the key in events and messages; it does not reveal it."""
    return hashlib.sha256(KEY_ID_LABEL + key).hexdigest()[:16]


@dataclass(frozen=True)
class KeyRing:
    """The seed keys the service holds, by key id; ``current`` derives every new commitment,
    the others are kept for commitments already published under them. The keys never show in
    a ``repr`` (logs, tracebacks)."""

    keys: Mapping[str, bytes] = field(repr=False)
    current: str

    def __post_init__(self) -> None:
        if self.current not in self.keys:
            raise ValueError("the current seed key must be one of the keys")

    @classmethod
    def of(cls, keys: Sequence[bytes]) -> KeyRing:
        """Keys in order of preference: the first is the current one."""
        if not keys:
            raise ValueError("a key ring needs at least one key")
        return cls({key_id(k): k for k in keys}, key_id(keys[0]))

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(self.keys)

    def key(self, wanted: str) -> bytes:
        """The key named ``wanted``; ``SeedKeyMissing`` when it is not held."""
        found = self.keys.get(wanted)
        if found is None:
            raise SeedKeyMissing(
                f"seed key {wanted!r} is not in the service's seed key file (it holds "
                f"{', '.join(self.keys)}): give the server the key file that holds it"
            )
        return found

    def __repr__(self) -> str:
        return f"KeyRing(current={self.current!r}, ids={self.ids!r})"


@dataclass(frozen=True)
class SeedCommitment:
    """What a table publishes about its next round's seed (R12.1): the commitment, and the
    public inputs of its derivation besides the key: the key id and the nonce (hex)."""

    commitment: str
    key_id: str
    nonce: str


def commit(keys: KeyRing, table_id: str, number: int, nonce: bytes) -> SeedCommitment:
    """R12.1: the commitment to round ``number`` of ``table_id`` under the current key."""
    seed = derive_seed(keys.key(keys.current), table_id, number, nonce)
    return SeedCommitment(commitment(seed), keys.current, nonce.hex())
