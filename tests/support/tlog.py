"""A client's own view of the transparency log, written for the tests from the specs alone
(RFC 9162 §2.1, C2SP signed-note, tlog-checkpoint, tlog-cosignature) and sharing no code with
the service: leaves recomputed from exported events, proofs checked by the RFC's recursive
definitions, checkpoints parsed and their Ed25519 signatures checked with ``cryptography``."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey


def sha256(data: bytes) -> bytes:
    return hashlib.sha256(data).digest()


def leaf_of(event: Mapping[str, Any]) -> bytes:
    """The leaf hash of an exported event (``stream``, ``version``, ``topic``, ``state``): its
    canonical form is sorted-key compact JSON of those four, the state without ``chain``."""
    body = {
        "stream": event["stream"],
        "version": event["version"],
        "topic": event["topic"],
        "state": {k: v for k, v in event["state"].items() if k != "chain"},
    }
    data = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return sha256(b"\x00" + data)


def _k(n: int) -> int:
    k = 1
    while k * 2 < n:
        k *= 2
    return k


def _node(left: bytes, right: bytes) -> bytes:
    return sha256(b"\x01" + left + right)


def tree_hash(leaves: Sequence[bytes]) -> bytes:
    """MTH(D[n]) of these leaf hashes (n ≥ 1), by the RFC's recursion."""
    if len(leaves) == 1:
        return leaves[0]
    k = _k(len(leaves))
    return _node(tree_hash(leaves[:k]), tree_hash(leaves[k:]))


def root_from_inclusion(index: int, size: int, leaf: bytes, proof: Sequence[bytes]) -> bytes | None:
    """The root PATH(index, D[size]) leads to from ``leaf``; None if the proof has the wrong
    shape."""
    if size == 1:
        return leaf if not proof else None
    if not proof or not 0 <= index < size:
        return None
    k = _k(size)
    if index < k:
        below = root_from_inclusion(index, k, leaf, proof[:-1])
        return None if below is None else _node(below, proof[-1])
    below = root_from_inclusion(index - k, size - k, leaf, proof[:-1])
    return None if below is None else _node(proof[-1], below)


def _subproof(
    m: int, n: int, proof: Sequence[bytes], whole: bool, old: bytes
) -> tuple[bytes, bytes] | None:
    if m == n:
        if whole:
            return (old, old) if not proof else None
        return (proof[0], proof[0]) if len(proof) == 1 else None
    if not proof:
        return None
    k = _k(n)
    if m <= k:
        below = _subproof(m, k, proof[:-1], whole, old)
        return None if below is None else (below[0], _node(below[1], proof[-1]))
    below = _subproof(m - k, n - k, proof[:-1], False, old)
    if below is None:
        return None
    return _node(proof[-1], below[0]), _node(proof[-1], below[1])


def consistent(
    old_size: int, new_size: int, old: bytes, new: bytes, proof: Sequence[bytes]
) -> bool:
    """Whether ``proof`` shows the tree (old_size, old) to be a prefix of (new_size, new)."""
    if old_size == new_size:
        return not proof and old == new
    if not 0 < old_size < new_size:
        return False
    return _subproof(old_size, new_size, list(proof), True, old) == (old, new)


@dataclass(frozen=True)
class Head:
    """A checkpoint as the tests read it."""

    origin: str
    size: int
    root: bytes
    text: str  # the note text (three lines)
    signatures: tuple[tuple[str, bytes], ...]  # (key name, key id ‖ signature ...)


def read_checkpoint(note: str) -> Head:
    cut = note.rindex("\n\n")
    text = note[: cut + 1]
    origin, size, root, empty = text.split("\n")
    assert empty == "" and size.isdigit()
    signatures = []
    for line in note[cut + 2 :].splitlines():
        dash, name, b64 = line.split(" ")
        assert dash == "\u2014", line
        signatures.append((name, base64.b64decode(b64)))
    return Head(origin, int(size), base64.b64decode(root), text, tuple(signatures))


def key_id(name: str, kind: int, public: bytes) -> bytes:
    return sha256(name.encode() + b"\n" + bytes([kind]) + public)[:4]


def signed_by(note: str, vkey: str) -> Head:
    """The checkpoint, once a signature by ``vkey`` (Ed25519, type 0x01) verifies over it;
    AssertionError otherwise."""
    name, hex_id, b64 = vkey.strip().split("+", 2)
    raw = base64.b64decode(b64)
    assert raw[0] == 1 and key_id(name, 1, raw[1:]).hex() == hex_id
    head = read_checkpoint(note)
    assert head.origin == name, (head.origin, name)
    for signer, sig in head.signatures:
        if signer == name and sig[:4].hex() == hex_id:
            try:
                Ed25519PublicKey.from_public_bytes(raw[1:]).verify(sig[4:], head.text.encode())
            except InvalidSignature:
                raise AssertionError(f"the signature of {name} does not verify") from None
            return head
    raise AssertionError(f"no signature by {name} on the checkpoint")


@dataclass(frozen=True)
class Witness:
    """A witness's key, cosigning as tlog-cosignature/v1 (Ed25519, type 0x04)."""

    name: str
    seed: bytes

    @property
    def public(self) -> bytes:
        return (
            Ed25519PrivateKey.from_private_bytes(self.seed)
            .public_key()
            .public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
        )

    @property
    def vkey(self) -> str:
        material = base64.b64encode(bytes([4]) + self.public).decode()
        return f"{self.name}+{key_id(self.name, 4, self.public).hex()}+{material}"

    def cosign(self, checkpoint_text: str, time: int, *, forge: bool = False) -> str:
        message = f"cosignature/v1\ntime {time}\n{checkpoint_text}".encode()
        signature = Ed25519PrivateKey.from_private_bytes(self.seed).sign(message)
        if forge:
            signature = bytes([signature[0] ^ 1]) + signature[1:]
        payload = key_id(self.name, 4, self.public) + time.to_bytes(8, "big") + signature
        return f"\u2014 {self.name} {base64.b64encode(payload).decode()}\n"
