"""Checkpoints as C2SP signed notes (``domain.tlog.note``, ``domain.tlog.checkpoint``), checked by a
minimal parser and verifier written here from the specs (signed-note, tlog-checkpoint,
tlog-cosignature) with ``cryptography``'s Ed25519, and against the published vectors: the
signed-note spec's example and golang.org/x/mod/sumdb/note's PeterNeumann key."""

from __future__ import annotations

import base64
import hashlib

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from domain.tlog.checkpoint import (
    Checkpoint,
    cosign,
    cosignatures,
    open_checkpoint,
    sign_checkpoint,
)
from domain.tlog.merkle import leaf_hash
from domain.tlog.note import (
    COSIGNATURE_V1,
    NoteError,
    Signer,
    Verifier,
    open_note,
    parse,
    sign,
)

# The signed-note spec's example (c2sp.org/signed-note, "Verifier keys").
SPEC_VKEY = "example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k"
SPEC_NOTE = (
    "This is an example message.\n\n— example.com/foo "
    "Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n"
)
# golang.org/x/mod/sumdb/note's example key, text and signature.
GO_SKEY = "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
GO_VKEY = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW"
GO_TEXT = (
    "If you think cryptography is the answer to your problem,\n"
    "then you don't know what your problem is.\n"
)
GO_SIGNATURE = (
    "— PeterNeumann "
    "x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n"
)


# The independent reader ----------------------------------------------------------------------


def key_hash(name: str, kind: int, public: bytes) -> bytes:
    return hashlib.sha256(name.encode() + b"\n" + bytes([kind]) + public).digest()[:4]


def read_vkey(vkey: str) -> tuple[str, bytes, int, bytes]:
    name, hex_id, rest = vkey.split("+", 2)
    raw = base64.b64decode(rest)
    return name, bytes.fromhex(hex_id), raw[0], raw[1:]


def split_note(note: str) -> tuple[str, list[tuple[str, bytes]]]:
    """(text, [(key name, signature bytes)]) split at the last blank line."""
    cut = note.rindex("\n\n")
    text, lines = note[: cut + 1], note[cut + 2 :].splitlines()
    sigs = []
    for line in lines:
        dash, name, b64 = line.split(" ")
        assert dash == "\u2014"
        sigs.append((name, base64.b64decode(b64)))
    return text, sigs


def verifies(note: str, vkey: str) -> bool:
    name, hex_id, kind, public = read_vkey(vkey)
    assert kind == 1 and key_hash(name, kind, public) == hex_id
    text, sigs = split_note(note)
    for signer, sig in sigs:
        if signer == name and sig[:4] == hex_id:
            try:
                Ed25519PublicKey.from_public_bytes(public).verify(sig[4:], text.encode())
                return True
            except InvalidSignature:
                return False
    return False


def raw_public(private: Ed25519PrivateKey) -> bytes:
    return private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )


# The vectors ---------------------------------------------------------------------------------


def test_the_spec_example_verifies_and_its_key_id_is_the_recommended_hash() -> None:
    note = open_note(SPEC_NOTE, [Verifier.parse(SPEC_VKEY)])
    assert note.text == "This is an example message.\n"
    assert verifies(SPEC_NOTE, SPEC_VKEY)


def test_signing_with_the_go_example_key_gives_the_go_note_byte_for_byte() -> None:
    signer = Signer.parse(GO_SKEY)
    assert signer.verifier.vkey == GO_VKEY
    assert signer.skey == GO_SKEY
    assert sign(GO_TEXT, signer) == GO_TEXT + "\n" + GO_SIGNATURE
    assert verifies(GO_TEXT + "\n" + GO_SIGNATURE, GO_VKEY)


# Checkpoints ---------------------------------------------------------------------------------

SEED = bytes(range(32))
NAME = "thirteen.test/log"


def test_a_checkpoint_is_origin_size_and_base64_root_then_a_blank_line_and_one_ed25519_line() -> (
    None
):
    signer = Signer.from_seed(NAME, SEED)
    root = leaf_hash(b"x")
    note = sign_checkpoint(Checkpoint(NAME, 1234, root), signer)
    text, sigs = split_note(note)
    assert text.split("\n") == [NAME, "1234", base64.b64encode(root).decode(), ""]
    assert note == text + "\n" + f"— {NAME} " + base64.b64encode(sigs[0][1]).decode() + "\n"
    # The key id is SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)[:4]; the signature covers the text.
    public = raw_public(Ed25519PrivateKey.from_private_bytes(SEED))
    assert sigs == [(NAME, key_hash(NAME, 1, public) + sigs[0][1][4:])]
    Ed25519PublicKey.from_public_bytes(public).verify(sigs[0][1][4:], text.encode())
    material = base64.b64encode(bytes([1]) + public).decode()
    vkey = f"{NAME}+{key_hash(NAME, 1, public).hex()}+{material}"
    assert signer.verifier.vkey == vkey
    assert verifies(note, vkey)
    assert open_checkpoint(note, Verifier.parse(vkey)) == Checkpoint(NAME, 1234, root)


def test_the_empty_tree_is_size_zero_and_sizes_have_no_leading_zeros() -> None:
    assert Checkpoint.parse(f"{NAME}\n0\n{base64.b64encode(bytes(32)).decode()}\n").size == 0
    with pytest.raises(NoteError):
        Checkpoint.parse(f"{NAME}\n012\n{base64.b64encode(bytes(32)).decode()}\n")
    with pytest.raises(NoteError):
        Checkpoint.parse(f"{NAME}\n12\n{base64.b64encode(bytes(31)).decode()}\n")


def test_a_checkpoint_signed_by_another_key_or_edited_is_refused() -> None:
    signer = Signer.from_seed(NAME, SEED)
    note = sign_checkpoint(Checkpoint(NAME, 7, leaf_hash(b"y")), signer)
    other = Signer.from_seed(NAME, bytes(32))  # same name, another key: another key id
    with pytest.raises(NoteError):
        open_checkpoint(note, other.verifier)
    edited = note.replace("\n7\n", "\n8\n")
    with pytest.raises(NoteError):
        open_checkpoint(edited, signer.verifier)
    assert not verifies(edited, signer.verifier.vkey)
    impostor = Signer.from_seed("thirteen.test/other", SEED)
    with pytest.raises(NoteError):  # its own origin only
        sign_checkpoint(Checkpoint(NAME, 7, leaf_hash(b"y")), impostor)


def test_unknown_signatures_are_ignored_but_a_known_one_that_fails_rejects_the_note() -> None:
    signer = Signer.from_seed(NAME, SEED)
    note = sign_checkpoint(Checkpoint(NAME, 3, leaf_hash(b"z")), signer)
    stranger = Signer.from_seed("someone.else", bytes(32))
    extra = note + stranger.line(stranger.signature(b"anything"))
    assert open_checkpoint(extra, signer.verifier).size == 3
    forged = signer.line(bytes(64))  # the log's name and key id, a signature that fails
    with pytest.raises(NoteError):
        open_checkpoint(note + forged, signer.verifier)


@pytest.mark.parametrize(
    "note",
    [
        "no newline at the end",
        "text\n",  # no signatures
        "text\n\n— name\n",
        "text\n\n- name AAAAAAA=\n",  # a hyphen, not an em dash
        "te\x01xt\n\n— name AAAAAAA=\n",
        "text\n\n— na+me AAAAAAA=\n",
    ],
)
def test_malformed_notes_are_refused(note: str) -> None:
    with pytest.raises(NoteError):
        parse(note)


# Cosignatures --------------------------------------------------------------------------------


def independent_cosignature(body: str, time: int, name: str, seed: bytes) -> str:
    """A tlog-cosignature/v1 line made here from the spec."""
    private = Ed25519PrivateKey.from_private_bytes(seed)
    message = f"cosignature/v1\ntime {time}\n{body}".encode()
    key_id = key_hash(name, 0x04, raw_public(private))
    payload = key_id + time.to_bytes(8, "big") + private.sign(message)
    return f"— {name} {base64.b64encode(payload).decode()}\n"


def test_cosignatures_follow_tlog_cosignature_both_ways() -> None:
    log = Signer.from_seed(NAME, SEED)
    checkpoint = Checkpoint(NAME, 99, leaf_hash(b"w"))
    note = sign_checkpoint(checkpoint, log)
    witness_seed = bytes(range(32, 64))
    witness = Signer.from_seed("witness.test/w", witness_seed, COSIGNATURE_V1)
    ours = cosign(checkpoint, 1_700_000_123, witness)
    assert ours == independent_cosignature(
        checkpoint.text, 1_700_000_123, witness.name, witness_seed
    )
    theirs = independent_cosignature(checkpoint.text, 1_700_000_999, witness.name, witness_seed)
    found = cosignatures(note + theirs, [witness.verifier])
    assert [(c.time, c.line) for c in found] == [(1_700_000_999, theirs)]
    assert (
        witness.verifier.vkey.split("+")[1]
        == key_hash(witness.name, 0x04, witness.verifier.public_key).hex()
    )
    # A cosignature over another time or checkpoint does not verify.
    tampered = independent_cosignature(
        checkpoint.text.replace("99", "98"), 5, witness.name, witness_seed
    )
    with pytest.raises(NoteError):
        cosignatures(note + tampered, [witness.verifier])
    # The log's own key is not a witness key: a note key does not cosign.
    with pytest.raises(NoteError):
        cosign(checkpoint, 1, log)
