"""Checkpoints (C2SP ``tlog-checkpoint``) and their cosignatures (C2SP ``tlog-cosignature``).

A checkpoint is a signed note whose text is the log's origin, its tree size in decimal and the
base64 root hash of the RFC 6962 tree of that size, one per line. The log signs it with its
Ed25519 note key (named as the origin). A witness that checked it is consistent with every
checkpoint it saw before adds a cosignature: an Ed25519 signature, under a key of type 0x04,
over ``cosignature/v1``, ``time <unix seconds>`` and the checkpoint's text, carried as
``— <witness name> base64(key id ‖ 8-byte big-endian time ‖ signature)``.

>>> from domain.tlog.note import COSIGNATURE_V1, Signer
>>> log = Signer.from_seed("example.com/log", bytes(32))
>>> note = sign_checkpoint(Checkpoint("example.com/log", 2, bytes(32)), log)
>>> print(note, end="")  # doctest: +ELLIPSIS
example.com/log
2
AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=
<BLANKLINE>
— example.com/log ...
>>> open_checkpoint(note, log.verifier).size
2
>>> witness = Signer.from_seed("example.com/witness", bytes(range(32)), COSIGNATURE_V1)
>>> cosigned = note + cosign(open_checkpoint(note, log.verifier), 1700000000, witness)
>>> [c.time for c in cosignatures(cosigned, [witness.verifier])]
[1700000000]
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable
from dataclasses import dataclass

from domain.tlog.merkle import HASH_BYTES
from domain.tlog.note import (
    COSIGNATURE_V1,
    ED25519,
    NoteError,
    Signature,
    Signer,
    Verifier,
    open_note,
    parse,
    sign,
)

COSIGNATURE_HEADER = "cosignature/v1\n"
MAX_TIME = (1 << 63) - 1
COSIGNATURE_AHEAD = 10 * 60
"""Seconds a cosignature's time may be ahead of the log's clock (witnesses' clocks drift)."""
COSIGNATURE_BEHIND = 24 * 60 * 60
"""Seconds a cosignature's time may be behind the log's clock: a witness cosigns what it just
checked, so a time from before that says nothing a client can use."""


@dataclass(frozen=True)
class Checkpoint:
    """A log's tree head: its origin, size and root hash."""

    origin: str
    size: int
    root: bytes

    @property
    def text(self) -> str:
        """The note text: three lines, each ending in a newline."""
        return f"{self.origin}\n{self.size}\n{base64.b64encode(self.root).decode()}\n"

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """A checkpoint's note text (extension lines are allowed and ignored)."""
        lines = text.split("\n")
        if len(lines) < 4 or lines[-1] != "" or not all(lines[:-1]):
            raise NoteError("a checkpoint is an origin, a size and a root hash, one per line")
        origin, size, encoded = lines[:3]
        if not size.isdigit() or (size != "0" and size.startswith("0")) or not size.isascii():
            raise NoteError(f"checkpoint size {size[:30]!r} is not a decimal number")
        try:
            root = base64.b64decode(encoded, validate=True)
        except (ValueError, binascii.Error):
            raise NoteError("the checkpoint's root hash is not base64") from None
        if len(root) != HASH_BYTES:
            raise NoteError(f"the checkpoint's root hash is {len(root)} bytes, not {HASH_BYTES}")
        return cls(origin, int(size), root)


def sign_checkpoint(checkpoint: Checkpoint, signer: Signer) -> str:
    """The signed checkpoint; the log's key name is its origin."""
    if signer.name != checkpoint.origin:
        raise NoteError(f"the log key {signer.name!r} signs checkpoints of its own origin only")
    return sign(checkpoint.text, signer)


def open_checkpoint(note: str, verifier: Verifier) -> Checkpoint:
    """The checkpoint a note holds, once the log's signature on it verifies."""
    if verifier.kind != ED25519:
        raise NoteError("a log's checkpoints are verified with its note key (type 0x01)")
    checkpoint = Checkpoint.parse(open_note(note, [verifier]).text)
    if checkpoint.origin != verifier.name:
        raise NoteError(
            f"the checkpoint's origin {checkpoint.origin!r} is not the log key's "
            f"name {verifier.name!r}"
        )
    return checkpoint


def key_conflict(note: str, verifier: Verifier) -> str | None:
    """Why the checkpoint ``note`` of the log named as ``verifier`` was not signed by it (another
    key of the same name, or an altered note); None when it verifies, or when it is another
    log's (another origin: a new name starts another log, and that is allowed).

    >>> from domain.tlog.note import Signer
    >>> old = Signer.from_seed("example.com/log", bytes(32))
    >>> new = Signer.from_seed("example.com/log", bytes(range(32)))
    >>> note = sign_checkpoint(Checkpoint("example.com/log", 2, bytes(32)), old)
    >>> key_conflict(note, old.verifier) is None
    True
    >>> print(key_conflict(note, new.verifier))  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
    the last checkpoint of log example.com/log (2 events) was signed by another key of that
    name (key id ..., this one's ...)
    """
    try:
        checkpoint = Checkpoint.parse(parse(note).text)
    except NoteError as error:
        return f"the last checkpoint is not readable ({error})"
    if checkpoint.origin != verifier.name:
        return None
    try:
        open_checkpoint(note, verifier)
    except NoteError:
        where = f"the last checkpoint of log {verifier.name} ({checkpoint.size} events)"
        theirs = [s.key_id.hex() for s in parse(note).signatures if s.name == verifier.name]
        ours = verifier.key_id.hex()
        if theirs and ours not in theirs:
            return (
                f"{where} was signed by another key of that name (key id {', '.join(theirs)}, "
                f"this one's {ours})"
            )
        return f"{where} does not verify with this log key (key id {ours}): it was altered"
    return None


def cosignature_time_problem(time: int, now: int) -> str | None:
    """Why a cosignature made at ``time`` is refused by a log whose clock says ``now`` (Unix
    seconds): none at all (0), more than ``COSIGNATURE_AHEAD`` ahead or ``COSIGNATURE_BEHIND``
    behind; None when it is within that window.

    >>> cosignature_time_problem(1_700_000_000, 1_700_000_000) is None
    True
    >>> cosignature_time_problem(1_700_000_600, 1_700_000_000) is None
    True
    >>> print(cosignature_time_problem(1_700_000_601, 1_700_000_000))
    its time 1700000601 is 601 s ahead of the log's clock (at most 600 s)
    >>> print(cosignature_time_problem(0, 1_700_000_000))
    its time is 0: a witness cosigns with the time it checked the checkpoint
    """
    if time <= 0:
        return "its time is 0: a witness cosigns with the time it checked the checkpoint"
    if time > now + COSIGNATURE_AHEAD:
        return (
            f"its time {time} is {time - now} s ahead of the log's clock "
            f"(at most {COSIGNATURE_AHEAD} s)"
        )
    if time < now - COSIGNATURE_BEHIND:
        return (
            f"its time {time} is {now - time} s behind the log's clock "
            f"(at most {COSIGNATURE_BEHIND} s: cosign what was just checked)"
        )
    return None


def cosignature_message(checkpoint_text: str, time: int) -> bytes:
    """What a witness signs: the header, the time line and the checkpoint's text."""
    return f"{COSIGNATURE_HEADER}time {time}\n{checkpoint_text}".encode()


def cosign(checkpoint: Checkpoint, time: int, witness: Signer) -> str:
    """A witness's cosignature line for ``checkpoint`` at ``time`` (Unix seconds)."""
    return cosign_text(checkpoint.text, time, witness)


def cosign_text(checkpoint_text: str, time: int, witness: Signer) -> str:
    """A witness's cosignature line over a checkpoint's note text as the log signed it, its
    extension lines included (tlog-cosignature signs the whole note body)."""
    if witness.kind != COSIGNATURE_V1:
        raise NoteError("a cosignature is made with a witness key (type 0x04)")
    if not 0 <= time <= MAX_TIME:
        raise NoteError(f"cosignature time {time} is out of range")
    stamp = time.to_bytes(8, "big")
    return witness.line(stamp + witness.signature(cosignature_message(checkpoint_text, time)))


@dataclass(frozen=True)
class Cosignature:
    """A verified cosignature: who, when, and its line."""

    verifier: Verifier
    time: int
    line: str


def verify_cosignature(checkpoint_text: str, signature: Signature, verifier: Verifier) -> int:
    """The time of a cosignature line by ``verifier`` that verifies over the checkpoint's text;
    raises ``NoteError`` otherwise."""
    if verifier.kind != COSIGNATURE_V1 or not signature.by(verifier):
        raise NoteError(f"the line is not a cosignature by {verifier.name!r}")
    if len(signature.payload) != 8 + 64:
        raise NoteError(f"the cosignature of {verifier.name!r} is not a time and a signature")
    time = int.from_bytes(signature.payload[:8], "big")
    if time > MAX_TIME:
        raise NoteError(f"the cosignature of {verifier.name!r} has a time out of range")
    message = cosignature_message(checkpoint_text, time)
    if not verifier.verify(message, signature.payload[8:]):
        raise NoteError(f"the cosignature of {verifier.name!r} does not verify")
    return time


def cosignatures(note: str, witnesses: Iterable[Verifier]) -> list[Cosignature]:
    """The cosignatures in ``note`` by the given witnesses, each verified (``NoteError`` when
    one does not verify); lines by other keys are ignored."""
    parsed = parse(note)
    found = []
    known = [w for w in witnesses if w.kind == COSIGNATURE_V1]
    for signature in parsed.signatures:
        for witness in known:
            if signature.by(witness):
                time = verify_cosignature(parsed.text, signature, witness)
                found.append(Cosignature(witness, time, signature.line))
    return found
