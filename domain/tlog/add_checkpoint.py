"""The C2SP ``tlog-witness`` protocol's ``add-checkpoint`` call, pure: its request body (an
``old <size>`` line, the consistency proof one base64 hash a line, a blank line, the signed
checkpoint), read and written, and the checks a witness makes of it, each failing with the HTTP
status the specification gives (``Refusal``): 400 a malformed request or an old size past the
checkpoint's, 404 an origin the witness does not know, 403 no verifying signature by the log's
key, 409 an old size that is not the size the witness last cosigned (``Conflict``, which carries
that size), 422 a tree of size 0 without the empty root, or a consistency proof that does not
hold.

>>> from domain.tlog.checkpoint import Checkpoint, sign_checkpoint
>>> from domain.tlog.merkle import EMPTY_ROOT
>>> from domain.tlog.note import Signer
>>> log = Signer.from_seed("example.com/log", bytes(32))
>>> note = sign_checkpoint(Checkpoint("example.com/log", 0, EMPTY_ROOT), log)
>>> body = format_request(0, [], note)
>>> body.decode().splitlines()[:3]
['old 0', '', 'example.com/log']
>>> request = parse_request(body)
>>> check(request, log.verifier, None).size
0
>>> check(request, None, None)
Traceback (most recent call last):
    ...
domain.tlog.add_checkpoint.Refusal: 404: the witness does not know the log 'example.com/log'
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import dataclass

from domain.tlog.checkpoint import Checkpoint, open_checkpoint
from domain.tlog.merkle import EMPTY_ROOT, HASH_BYTES, verify_consistency
from domain.tlog.note import NoteError, Verifier, parse

MAX_PROOF_LINES = 63
"""A client sends at most 63 consistency proof lines (tlog-witness)."""
SIZE_CONTENT_TYPE = "text/x.tlog.size"
"""The content type of a 409's body: the size the witness last cosigned, and a newline."""
MAX_SIZE = (1 << 63) - 1


class Refusal(Exception):
    """The witness does not cosign: ``status`` is the HTTP status the specification gives,
    the message says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"{status}: {message}")
        self.status = status
        self.reason = message


class Conflict(Refusal):
    """409: the old size is not the size of the checkpoint the witness last cosigned for this
    log (``size``, 0 when none)."""

    def __init__(self, size: int, old: int) -> None:
        super().__init__(409, f"old size {old} is not {size}, the size this witness last cosigned")
        self.size = size


@dataclass(frozen=True)
class Request:
    """An ``add-checkpoint`` request: the old size, the consistency proof from it, and the
    signed checkpoint (its note as sent)."""

    old_size: int
    proof: tuple[bytes, ...]
    note: str

    @property
    def origin(self) -> str:
        """The checkpoint's origin line (not verified)."""
        return self.note.split("\n", 1)[0]


def _size(text: str, what: str) -> int:
    """A decimal size without leading zeros (``0`` alone)."""
    if not text.isascii() or not text.isdigit() or (text != "0" and text.startswith("0")):
        raise Refusal(400, f"{what} {text[:30]!r} is not a decimal size without leading zeros")
    size = int(text)
    if size > MAX_SIZE:
        raise Refusal(400, f"{what} {text[:30]} is out of range")
    return size


def parse_request(body: bytes) -> Request:
    """The request in ``body``; ``Refusal`` 400 when it is not one (not UTF-8, no ``old``
    line, a proof line that is not one base64 hash, more than 63 of them, no blank line, or a
    checkpoint that is not a signed note of three lines at least).

    >>> parse_request(b"old 01\\n\\nx\\n")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
        ...
    domain.tlog.add_checkpoint.Refusal: 400: old size '01' is not a decimal size without ...
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise Refusal(400, "the request body is not UTF-8") from None
    head, blank, note = text.partition("\n\n")
    if not blank:
        raise Refusal(400, "the request is an old size line, proof lines, a blank line and a note")
    lines = head.split("\n")
    first = lines[0]
    if not first.startswith("old "):
        raise Refusal(400, f"the first line {first[:40]!r} is not 'old <size>'")
    old = _size(first[4:], "old size")
    if len(lines) - 1 > MAX_PROOF_LINES:
        raise Refusal(400, f"{len(lines) - 1} proof lines: at most {MAX_PROOF_LINES}")
    proof = []
    for number, line in enumerate(lines[1:], 1):
        try:
            digest = base64.b64decode(line, validate=True)
        except (ValueError, binascii.Error):
            raise Refusal(400, f"proof line {number} is not base64") from None
        if len(digest) != HASH_BYTES:
            raise Refusal(400, f"proof line {number} is {len(digest)} bytes, not a hash")
        proof.append(digest)
    try:
        Checkpoint.parse(parse(note).text)
    except NoteError as error:
        raise Refusal(400, f"not a signed checkpoint: {error}") from None
    return Request(old, tuple(proof), note)


def format_request(old_size: int, proof: Sequence[bytes], note: str) -> bytes:
    """The body of an ``add-checkpoint`` request (what a log sends)."""
    lines = [f"old {old_size}\n", *(base64.b64encode(h).decode() + "\n" for h in proof), "\n"]
    return ("".join(lines) + note).encode()


def check(request: Request, log: Verifier | None, latest: Checkpoint | None) -> Checkpoint:
    """The checkpoint of ``request``, once the witness may cosign it: signed by ``log`` (the
    key it trusts for the request's origin; None: an unknown origin), its old size the size of
    ``latest`` (the checkpoint it last cosigned for that log, None: never, size 0), and proven
    to extend it. ``Refusal`` with the specification's status otherwise, checked in its order.

    The witness's own record makes rollbacks and forks fail whatever the log claims: a smaller
    tree comes with an old size past it (400) or not the witness's (409), another root at the
    witness's size fails the same-size check (422), and a longer tree must be proven from the
    witness's root, not from one the log names (422)."""
    if log is None:
        raise Refusal(404, f"the witness does not know the log {request.origin[:200]!r}")
    try:
        checkpoint = open_checkpoint(request.note, log)
    except NoteError as error:
        raise Refusal(403, f"the checkpoint is not signed by the log's key: {error}") from None
    if request.old_size > checkpoint.size:
        raise Refusal(
            400, f"old size {request.old_size} is larger than the checkpoint's {checkpoint.size}"
        )
    known = latest.size if latest is not None else 0
    if request.old_size != known:
        raise Conflict(known, request.old_size)
    if checkpoint.size == 0 and checkpoint.root != EMPTY_ROOT:
        raise Refusal(422, "a tree of size 0 has the empty tree's root")
    if latest is None or request.old_size == 0:
        if request.proof:
            raise Refusal(422, "from old size 0 the consistency proof is empty")
        return checkpoint
    if request.old_size == checkpoint.size:
        if request.proof or checkpoint.root != latest.root:
            raise Refusal(
                422, f"another root at size {checkpoint.size}, the size this witness cosigned"
            )
        return checkpoint
    if not verify_consistency(
        latest.size, checkpoint.size, latest.root, checkpoint.root, request.proof
    ):
        raise Refusal(
            422,
            f"the consistency proof from size {latest.size} to {checkpoint.size} does not hold",
        )
    return checkpoint


def parse_size(body: bytes) -> int | None:
    """The size in a 409's body (``text/x.tlog.size``: a decimal and a newline); None when it
    is not one.

    >>> parse_size(b"42\\n"), parse_size(b"x\\n"), parse_size(b"042\\n")
    (42, None, None)
    """
    text = body.decode("ascii", "replace")
    if not text.endswith("\n"):
        return None
    try:
        return _size(text[:-1], "size")
    except Refusal:
        return None


def cosignature_lines(body: bytes) -> str | None:
    """A 200's body as note signature lines (each ``— NAME SIGNATURE`` and a newline), None
    when it is not (what a log adds to its checkpoint and verifies with the witnesses' keys)."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not text.endswith("\n") or not text.startswith("\u2014 "):
        return None
    if any(not line.startswith("\u2014 ") for line in text[:-1].split("\n")):
        return None
    return text
