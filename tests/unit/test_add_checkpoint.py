"""C2SP ``tlog-witness`` ``add-checkpoint``, pure (``domain.tlog.add_checkpoint``): the request
read and written, and each of the witness's checks with the status the specification gives.
Trees and proofs are built here by RFC 6962's recursive MTH and SUBPROOF, not by the domain's
own code."""

from __future__ import annotations

import base64
import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from domain.tlog.add_checkpoint import (
    MAX_PROOF_LINES,
    Conflict,
    Refusal,
    check,
    cosignature_lines,
    format_request,
    parse_request,
    parse_size,
)
from domain.tlog.checkpoint import Checkpoint, cosign, cosignatures, sign_checkpoint
from domain.tlog.note import COSIGNATURE_V1, Signer

LOG = Signer.from_seed("example.com/log", bytes(32))
OTHER = Signer.from_seed("example.com/log", bytes(range(32)))  # same name, another key


def mth(leaves: list[bytes]) -> bytes:
    """RFC 6962 2.1's MTH of these leaf hashes (at least one)."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1 << ((len(leaves) - 1).bit_length() - 1)
    return hashlib.sha256(b"\x01" + mth(leaves[:k]) + mth(leaves[k:])).digest()


def subproof(m: int, leaves: list[bytes], whole: bool) -> list[bytes]:
    """RFC 6962 2.1.2's SUBPROOF(m, D[n], b), 0 < m <= n."""
    n = len(leaves)
    if m == n:
        return [] if whole else [mth(leaves)]
    k = 1 << ((n - 1).bit_length() - 1)
    if m <= k:
        return [*subproof(m, leaves[:k], whole), mth(leaves[k:])]
    return [*subproof(m - k, leaves[k:], False), mth(leaves[:k])]


LEAVES = [hashlib.sha256(b"\x00" + bytes([n])).digest() for n in range(40)]


def note(size: int, root: bytes | None = None, signer: Signer = LOG) -> str:
    root = root if root is not None else mth(LEAVES[:size]) if size else hashlib.sha256().digest()
    return sign_checkpoint(Checkpoint(LOG.name, size, root), signer)


def head(size: int) -> Checkpoint:
    return Checkpoint(LOG.name, size, mth(LEAVES[:size]))


def status(old: int, proof: list[bytes], body_note: str, latest: Checkpoint | None) -> int:
    try:
        check(parse_request(format_request(old, proof, body_note)), LOG.verifier, latest)
    except Refusal as refusal:
        return refusal.status
    return 200


def test_the_request_is_written_as_the_specification_shows() -> None:
    proof = [bytes([1]) * 32, bytes([2]) * 32]
    body = format_request(20852014, proof, note(8)).decode()
    lines = body.split("\n")
    assert lines[0] == "old 20852014"
    assert lines[1:3] == [base64.b64encode(h).decode() for h in proof]
    assert lines[3] == "" and lines[4] == LOG.name
    request = parse_request(body.encode())
    assert (request.old_size, request.proof, request.note) == (20852014, tuple(proof), note(8))


@given(st.data())
def test_every_honest_extension_is_accepted(data: st.DataObject) -> None:
    new = data.draw(st.integers(1, len(LEAVES)))
    old = data.draw(st.integers(0, new))
    latest = head(old) if old else None
    proof = subproof(old, LEAVES[:new], True) if old else []
    assert status(old, proof, note(new), latest) == 200


@given(st.data())
def test_any_altered_proof_hash_is_422(data: st.DataObject) -> None:
    new = data.draw(st.integers(3, len(LEAVES)))
    old = data.draw(st.integers(1, new - 1))
    proof = subproof(old, LEAVES[:new], True)
    at = data.draw(st.integers(0, len(proof) - 1))
    bit = data.draw(st.integers(0, 255))
    altered = list(proof)
    altered[at] = bytes(
        b ^ (1 << (bit % 8)) if i == bit // 8 else b for i, b in enumerate(proof[at])
    )
    assert status(old, altered, note(new), head(old)) == 422
    assert status(old, proof[:-1], note(new), head(old)) == 422  # a hash withheld


@pytest.mark.parametrize(
    ("case", "body", "expected"),
    [
        ("empty", b"", 400),
        ("not UTF-8", b"old 0\n\n\xff\n", 400),
        ("no blank line", b"old 0\n", 400),
        ("no old line", b"\n" + note(1).encode(), 400),
        ("old with two spaces", b"old  0\n\n" + note(1).encode(), 400),
        ("leading zero", b"old 00\n\n" + note(1).encode(), 400),
        ("a sign", b"old +1\n\n" + note(1).encode(), 400),
        ("not digits", "old ١\n\n".encode() + note(1).encode(), 400),
        ("too large", b"old 99999999999999999999\n\n" + note(1).encode(), 400),
        ("proof not base64", b"old 0\n@@\n\n" + note(1).encode(), 400),
        ("proof not a hash", b"old 0\nAAAA\n\n" + note(1).encode(), 400),
        ("64 proof lines", format_request(0, [bytes(32)] * (MAX_PROOF_LINES + 1), note(1)), 400),
        ("a CR", format_request(0, [], note(1)).replace(b"\n\n", b"\n\r\n", 1), 400),
        ("no signature", b"old 0\n\n" + head(1).text.encode(), 400),
        ("two lines only", format_request(0, [], note(1)).replace(b"\n1\n", b"\n", 1), 400),
    ],
)  # fmt: skip
def test_malformed_requests_are_400(case: str, body: bytes, expected: int) -> None:
    with pytest.raises(Refusal) as refused:
        parse_request(body)
    assert refused.value.status == expected, case


def test_each_check_answers_the_specifications_status_in_its_order() -> None:
    five = head(5)
    proof = subproof(5, LEAVES[:8], True)
    request = parse_request(format_request(5, proof, note(8)))
    with pytest.raises(Refusal) as unknown:
        check(request, None, five)
    assert unknown.value.status == 404
    assert status(5, proof, note(8, signer=OTHER), five) == 403  # a key of its name, not its
    forged = note(8)[:-6] + ("A" if note(8)[-6] != "A" else "B") + note(8)[-5:]
    assert status(5, proof, forged, five) == 403
    assert status(9, [], note(8), five) == 400  # old past the checkpoint, before the 409
    assert status(9, [], note(8), None) == 400
    for old in (0, 3, 7):
        with pytest.raises(Conflict) as conflict:
            check(parse_request(format_request(old, [], note(8))), LOG.verifier, five)
        assert (conflict.value.status, conflict.value.size) == (409, 5)
    with pytest.raises(Conflict) as never:
        check(parse_request(format_request(3, [], note(8))), LOG.verifier, None)
    assert never.value.size == 0  # never cosigned: its size is 0
    assert status(0, [], note(0, bytes(32)), None) == 422  # size 0 without the empty root
    assert status(0, [], note(0), None) == 200
    assert status(0, [bytes(32)], note(3), None) == 422  # a proof from size 0
    assert status(5, [], note(5, bytes([9]) * 32), five) == 422  # a fork at its size
    assert status(5, [], note(5), five) == 200  # the same checkpoint again
    assert status(5, [bytes(32)], note(5), five) == 422
    assert status(5, [], note(8), five) == 422  # a proof withheld
    assert status(5, proof, note(8, bytes([8]) * 32), five) == 422  # a rewritten history
    assert status(5, proof, note(8), five) == 200


def test_a_rollback_is_never_cosigned_whatever_old_size_is_claimed() -> None:
    eight = head(8)
    for old in range(0, 9):
        assert status(old, [], note(5), eight) in (400, 409)
    for old in range(1, 6):  # with an honest proof of the smaller tree
        assert status(old, subproof(old, LEAVES[:5], True), note(5), eight) == 409


def test_the_answers_a_log_reads() -> None:
    assert parse_size(b"5\n") == 5 and parse_size(b"0\n") == 0
    assert [parse_size(b) for b in (b"5", b"05\n", b"-1\n", b"\xff\n", b"")] == [None] * 5
    witness = Signer.from_seed("witness.example/w1", bytes(range(32)), COSIGNATURE_V1)
    line = cosign(head(8), 1_700_000_000, witness)
    lines = cosignature_lines(line.encode())
    assert lines == line
    assert [c.time for c in cosignatures(note(8) + line, [witness.verifier])] == [1_700_000_000]
    assert cosignature_lines(b"") is None
    assert cosignature_lines(b"hello\n") is None
    assert cosignature_lines(line.encode()[:-1]) is None  # no final newline
    assert cosignature_lines(line.encode() + b"junk\n") is None
