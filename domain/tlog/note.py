"""Signed notes (C2SP ``signed-note``): a text ending in a newline, a blank line, then one line
per signature, ``— <key name> <base64(key id ‖ signature)>``. A key is named by its name and a
4-byte key id, SHA-256(name ‖ 0x0A ‖ type ‖ public key)[:4], where the type byte says what it
signs: 0x01 Ed25519 over the note text (a log's checkpoint), 0x04 a timestamped Ed25519
cosignature (``domain.tlog.checkpoint``). Public keys travel as verifier keys (vkeys),
``<name>+<hex key id>+<base64(type ‖ public key)>``; private keys as
``PRIVATE+KEY+<name>+<hex key id>+<base64(type ‖ seed)>``, the form of golang.org/x/mod/sumdb/note.

>>> signer = Signer.from_seed("example.com/log", bytes(32))
>>> note = sign("hello\\n", signer)
>>> note.splitlines()[:2], note.splitlines()[2].split()[:2]
(['hello', ''], ['—', 'example.com/log'])
>>> opened = open_note(note, [Verifier.parse(signer.verifier.vkey)])
>>> opened.text
'hello\\n'
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

EM_DASH = "\u2014"
ED25519 = 0x01  # a note signed with Ed25519 (signed-note)
COSIGNATURE_V1 = 0x04  # a timestamped Ed25519 checkpoint cosignature (tlog-cosignature)
TYPES = (ED25519, COSIGNATURE_V1)
PRIVATE_PREFIX = "PRIVATE+KEY+"
MAX_SIGNATURES = 100  # the spec asks verifiers to accept at least 16


class NoteError(ValueError):
    """A note, key or signature that is malformed or does not verify; the message says which."""


def check_name(name: str) -> str:
    """A key name: non-empty, without spaces or '+' (signed-note)."""
    if not name or "+" in name or any(c.isspace() for c in name) or not name.isprintable():
        raise NoteError(f"key name {name[:60]!r} must be non-empty, without spaces or '+'")
    return name


def key_id(name: str, kind: int, public_key: bytes) -> bytes:
    """SHA-256(name ‖ 0x0A ‖ type ‖ public key)[:4].

    >>> key_id("example.com/foo", ED25519, bytes(32)).hex()
    'ae0599c0'
    """
    return hashlib.sha256(name.encode() + b"\n" + bytes([kind]) + public_key).digest()[:4]


def _raw(public: Ed25519PublicKey) -> bytes:
    return public.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def _key_text(name: str, key_id: bytes, kind: int, material: bytes) -> str:
    """``NAME+KEYID+KEY``: the text form of a public or (after its prefix) private key."""
    return f"{name}+{key_id.hex()}+{base64.b64encode(bytes([kind]) + material).decode()}"


def _decoded(parts: Sequence[str], what: str) -> tuple[bytes, bytes]:
    """The key id and the key (type byte first) of ``NAME+KEYID+KEY`` split in three."""
    try:
        return bytes.fromhex(parts[1]), base64.b64decode(parts[2], validate=True)
    except (ValueError, binascii.Error):
        raise NoteError(f"{what}: key id or key is not hex/base64") from None


@dataclass(frozen=True)
class Verifier:
    """A public key that verifies one kind of signature under one name."""

    name: str
    kind: int
    public_key: bytes

    @property
    def key_id(self) -> bytes:
        return key_id(self.name, self.kind, self.public_key)

    @property
    def vkey(self) -> str:
        return _key_text(self.name, self.key_id, self.kind, self.public_key)

    @classmethod
    def parse(cls, vkey: str) -> Verifier:
        """A vkey; its key id must be the one its name and key give."""
        parts = vkey.strip().split("+", 2)  # base64 may hold "+"
        if len(parts) != 3:
            raise NoteError(f"{vkey[:60]!r} is not a verifier key (NAME+KEYID+KEY)")
        name = check_name(parts[0])
        given, material = _decoded(parts, f"verifier key {name!r}")
        if len(given) != 4 or len(material) != 33 or material[0] not in TYPES:
            raise NoteError(
                f"verifier key {name!r}: expected a 4-byte key id and an Ed25519 key "
                f"(type {ED25519} or {COSIGNATURE_V1})"
            )
        verifier = cls(name, material[0], material[1:])
        if verifier.key_id != given:
            raise NoteError(f"verifier key {name!r}: its key id does not match its name and key")
        return verifier

    def verify(self, message: bytes, signature: bytes) -> bool:
        try:
            Ed25519PublicKey.from_public_bytes(self.public_key).verify(signature, message)
        except (InvalidSignature, ValueError):
            return False
        return True


@dataclass(frozen=True)
class Signer:
    """A private key (its 32-byte Ed25519 seed) that signs one kind of signature under one
    name. Its ``repr`` shows no key."""

    name: str
    kind: int
    seed: bytes

    def __repr__(self) -> str:
        return f"Signer({self.name!r}, key id {self.verifier.key_id.hex()})"

    @classmethod
    def from_seed(cls, name: str, seed: bytes, kind: int = ED25519) -> Signer:
        if len(seed) != 32 or kind not in TYPES:
            raise NoteError("an Ed25519 key is a 32-byte seed")
        return cls(check_name(name), kind, seed)

    @property
    def verifier(self) -> Verifier:
        public = _raw(Ed25519PrivateKey.from_private_bytes(self.seed).public_key())
        return Verifier(self.name, self.kind, public)

    @property
    def skey(self) -> str:
        return PRIVATE_PREFIX + _key_text(self.name, self.verifier.key_id, self.kind, self.seed)

    @classmethod
    def parse(cls, skey: str) -> Signer:
        """A private key ``PRIVATE+KEY+NAME+KEYID+KEY``; errors quote no key material."""
        text = skey.strip()
        if not text.startswith(PRIVATE_PREFIX):
            raise NoteError("not a private key (PRIVATE+KEY+NAME+KEYID+KEY)")
        parts = text[len(PRIVATE_PREFIX) :].split("+", 2)
        if len(parts) != 3:
            raise NoteError("not a private key (PRIVATE+KEY+NAME+KEYID+KEY)")
        name = parts[0]
        given, material = _decoded(parts, f"private key {name[:60]!r}")
        if len(material) != 33 or material[0] not in TYPES:
            raise NoteError(f"private key {name[:60]!r}: not an Ed25519 key")
        signer = cls.from_seed(name, material[1:], material[0])
        if signer.verifier.key_id != given:
            raise NoteError(f"private key {name!r}: its key id does not match its name and key")
        return signer

    def signature(self, message: bytes) -> bytes:
        return Ed25519PrivateKey.from_private_bytes(self.seed).sign(message)

    def line(self, payload: bytes) -> str:
        """A signature line carrying ``payload`` (what follows the key id)."""
        encoded = base64.b64encode(self.verifier.key_id + payload).decode()
        return f"{EM_DASH} {self.name} {encoded}\n"


@dataclass(frozen=True)
class Signature:
    """One signature line: the key's name and id, and what follows the id."""

    name: str
    key_id: bytes
    payload: bytes
    line: str  # as it appeared, with its newline

    def by(self, verifier: Verifier) -> bool:
        return self.name == verifier.name and self.key_id == verifier.key_id


@dataclass(frozen=True)
class Note:
    text: str  # with its final newline
    signatures: tuple[Signature, ...]


def _check_text(text: str) -> None:
    if not text.endswith("\n"):
        raise NoteError("a note's text ends in a newline")
    if any(ord(c) < 0x20 and c != "\n" for c in text):
        raise NoteError("a note holds no control characters but newlines")


def parse_signature(line: str) -> Signature:
    """One signature line (its newline optional)."""
    body = line[:-1] if line.endswith("\n") else line
    parts = body.split(" ")
    if len(parts) != 3 or parts[0] != EM_DASH:
        raise NoteError(f"{body[:80]!r} is not a signature line (— NAME SIGNATURE)")
    name = check_name(parts[1])
    try:
        raw = base64.b64decode(parts[2], validate=True)
    except (ValueError, binascii.Error):
        raise NoteError(f"the signature of {name!r} is not base64") from None
    if len(raw) < 5:
        raise NoteError(f"the signature of {name!r} is too short")
    return Signature(name, raw[:4], raw[4:], body + "\n")


def parse(note: str) -> Note:
    """A signed note split into its text and signature lines (none verified)."""
    _check_text(note)
    text, sep, block = note.rpartition("\n\n")
    if not sep or not block:
        raise NoteError("a signed note is its text, a blank line and signature lines")
    lines = block.splitlines(keepends=True)
    if len(lines) > MAX_SIGNATURES:
        raise NoteError(f"a note carries at most {MAX_SIGNATURES} signatures")
    return Note(text + "\n", tuple(parse_signature(line) for line in lines))


def sign(text: str, signer: Signer) -> str:
    """The note of ``text`` signed by ``signer`` (an Ed25519 note signature)."""
    _check_text(text)
    if signer.kind != ED25519:
        raise NoteError("a note is signed with an Ed25519 note key (type 0x01)")
    return text + "\n" + signer.line(signer.signature(text.encode()))


def open_note(note: str, verifiers: Iterable[Verifier]) -> Note:
    """The note, once a signature by one of the Ed25519 ``verifiers`` verifies. Signatures by
    other keys are ignored; a known key's signature that does not verify fails the note."""
    parsed = parse(note)
    known = [v for v in verifiers if v.kind == ED25519]
    verified = False
    for signature in parsed.signatures:
        for verifier in known:
            if signature.by(verifier):
                if not verifier.verify(parsed.text.encode(), signature.payload):
                    raise NoteError(f"the signature of {verifier.name!r} does not verify")
                verified = True
    if not verified:
        names = ", ".join(sorted({v.name for v in known})) or "no key"
        raise NoteError(f"the note is not signed by a known key ({names})")
    return parsed
