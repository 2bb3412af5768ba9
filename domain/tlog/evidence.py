"""Whether exported events are in the log the operator signed (issue 12): each event's leaf is
recomputed from the exported record and checked, by its inclusion proof, against the root of a
signed checkpoint; an earlier checkpoint the auditor kept is checked to be a prefix of that one.

The log's leaves are the stored events in log order; a leaf's data is the event's canonical form,
exactly the bytes its hash chain link hashes (``domain.tlog.chain.canonical``: sorted-key compact
JSON of stream, version, topic and state, the state without its ``chain``), and its hash is
SHA-256(0x00 ‖ data) (``domain.tlog.merkle``).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from domain.findings import Finding
from domain.tlog.chain import StoredRecord, canonical
from domain.tlog.checkpoint import Checkpoint, open_checkpoint, verify_cosignature
from domain.tlog.merkle import leaf_hash, verify_consistency, verify_inclusion
from domain.tlog.note import COSIGNATURE_V1, Note, NoteError, Verifier, parse

LOG = "LOG"  # the findings' rule: the transparency log


def leaf_data(record: StoredRecord) -> bytes:
    """The bytes a stored event is logged as: its canonical form (see the module's doc)."""
    return canonical(record.stream, record.version, record.topic, record.state)


def _encoded(hashes: tuple[bytes, ...]) -> list[str]:
    return [base64.b64encode(h).decode() for h in hashes]


def _decoded(hashes: Any) -> tuple[bytes, ...]:
    """Hashes from an export (base64, strictly): none when the field is missing or empty."""
    return tuple(base64.b64decode(h, validate=True) for h in hashes or ())


@dataclass(frozen=True)
class EventProof:
    """Where one event is in the log, and its inclusion proof in the checkpoint's tree."""

    stream: str
    version: int
    position: int  # its position in the event log (notification id)
    leaf_index: int  # its leaf in the tree (0-based; positions may skip numbers, leaves do not)
    hashes: tuple[bytes, ...]

    def to_json(self) -> dict[str, Any]:
        return {**vars(self), "hashes": _encoded(self.hashes)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EventProof:
        version, position, leaf = (int(data[n]) for n in ("version", "position", "leaf_index"))
        return cls(str(data["stream"]), version, position, leaf, _decoded(data["hashes"]))


@dataclass(frozen=True)
class LogEvidence:
    """An export's log section: a signed checkpoint, every exported event's inclusion proof in
    its tree, and, when asked for, the consistency proof from an earlier tree size to it."""

    checkpoint: str  # the signed note, with any witnesses' cosignatures
    proofs: tuple[EventProof, ...]
    earlier_size: int = 0
    consistency: tuple[bytes, ...] = ()

    def to_json(self) -> dict[str, Any]:
        proofs = [p.to_json() for p in self.proofs]
        return {**vars(self), "proofs": proofs, "consistency": _encoded(self.consistency)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> LogEvidence:
        proofs = tuple(EventProof.from_json(p) for p in data["proofs"])
        earlier = int(data.get("earlier_size") or 0)
        return cls(str(data["checkpoint"]), proofs, earlier, _decoded(data.get("consistency")))


def _checkpoint(log: LogEvidence, key: Verifier | None) -> tuple[Checkpoint, Finding]:
    if key is None:
        checkpoint = Checkpoint.parse(parse(log.checkpoint).text)
        return checkpoint, Finding(
            LOG,
            True,
            f"not verified: the checkpoint's signature (tree of {checkpoint.size} events) was "
            "not checked; give the log's public key (--log-public-key) to check it",
        )
    checkpoint = open_checkpoint(log.checkpoint, key)
    return checkpoint, Finding(
        LOG,
        True,
        f"the checkpoint of the log {checkpoint.origin} at {checkpoint.size} events is signed "
        "by its key",
    )


def check_log(
    records: Sequence[StoredRecord],
    log: LogEvidence | None,
    key: Verifier | None = None,
    earlier: Checkpoint | None = None,
) -> list[Finding]:
    """Findings about ``records`` (an export's events) against its log section: the
    checkpoint's signature by ``key``, each record's inclusion, and the consistency of an
    ``earlier`` checkpoint (verified by the caller) with the export's."""
    if log is None:
        if key is None and earlier is None:
            return [
                Finding(
                    LOG,
                    True,
                    "not checked: the document carries no inclusion proofs (exported before "
                    "the transparency log, or by a server without one)",
                )
            ]
        return [
            Finding(
                LOG,
                False,
                "the document carries no inclusion proofs, so its events cannot be shown to "
                "be in the log the key signs: export the round again",
            )
        ]
    try:
        checkpoint, signed = _checkpoint(log, key)
    except NoteError as error:
        return [Finding(LOG, False, f"the document's checkpoint is not trusted: {error}")]
    findings = [signed, *check_inclusion(records, log.proofs, checkpoint)]
    if earlier is not None:
        findings.append(_consistent(earlier, checkpoint, log))
    return findings


_WITNESSES_NOT_CHECKED = (
    "not checked: the checkpoint's witness cosignatures were not checked; give the witnesses' "
    "public keys (--witness-key) to require them"
)


def check_cosignatures(
    log: LogEvidence | None, witnesses: Sequence[Verifier], required: int | None = None
) -> list[Finding]:
    """Whether the export's checkpoint carries a cosignature (C2SP tlog-cosignature v1,
    verified with ``domain.tlog.checkpoint.verify_cosignature``, as the server does) by at least
    ``required`` of ``witnesses`` (default: all of them). One finding: which witnesses
    cosigned it and when, or which are missing or invalid. Without witnesses it says the
    cosignatures were not checked.

    >>> from domain.tlog.checkpoint import cosign, sign_checkpoint
    >>> from domain.tlog.note import Signer
    >>> key = Signer.from_seed("example.com/log", bytes(32))
    >>> w1 = Signer.from_seed("w1.example", bytes(range(32)), COSIGNATURE_V1)
    >>> w2 = Signer.from_seed("w2.example", bytes(range(1, 33)), COSIGNATURE_V1)
    >>> checkpoint = Checkpoint("example.com/log", 2, bytes(32))
    >>> note = sign_checkpoint(checkpoint, key) + cosign(checkpoint, 1700000000, w1)
    >>> [check_cosignatures(LogEvidence(note, ()), ws)[0].ok for ws in ([w1.verifier],
    ...     [w1.verifier, w2.verifier])]
    [True, False]
    >>> check_cosignatures(LogEvidence(note, ()), [w1.verifier, w2.verifier], 1)[0].ok
    True
    """
    if not witnesses:
        return [] if log is None else [Finding(LOG, True, _WITNESSES_NOT_CHECKED)]
    needed = len(witnesses) if required is None else required
    if log is None:
        return [Finding(LOG, False, "the document carries no checkpoint for witnesses to cosign")]
    try:
        note = parse(log.checkpoint)
    except NoteError as error:
        return [Finding(LOG, False, f"the document's checkpoint is not readable: {error}")]
    cosigned: list[str] = []
    lacking: list[str] = []
    for witness in witnesses:
        said, ok = _cosigned_by(note, witness)
        (cosigned if ok else lacking).append(f"{witness.name} ({said})")
    if len(cosigned) >= needed:
        return [
            Finding(
                LOG,
                True,
                f"the checkpoint is cosigned by {len(cosigned)} of the {len(witnesses)} "
                f"witnesses given ({needed} required): {', '.join(cosigned)}"
                + (f"; not by {', '.join(lacking)}" if lacking else ""),
            )
        ]
    return [
        Finding(
            LOG,
            False,
            f"the checkpoint is cosigned by {len(cosigned)} of the {len(witnesses)} witnesses "
            f"given, {needed} required; not by {', '.join(lacking)}",
        )
    ]


def _cosigned_by(note: Note, witness: Verifier) -> tuple[str, bool]:
    """Whether ``witness`` validly cosigned ``note``, and when (its newest valid line) or why
    not."""
    if witness.kind != COSIGNATURE_V1:
        return "its key is not a witness key, type 0x04", False
    lines = [s for s in note.signatures if s.by(witness)]
    if not lines:
        return "no cosignature by it", False
    times, problems = [], []
    for line in lines:
        try:
            times.append(verify_cosignature(note.text, line, witness))
        except NoteError as error:
            problems.append(str(error))
    if times:
        return f"time {max(times)}", True
    return f"invalid: {'; '.join(problems)}", False


def check_inclusion(
    records: Sequence[StoredRecord],
    proofs: Sequence[EventProof],
    checkpoint: Checkpoint,
    *,
    source: str = "the document",
) -> list[Finding]:
    """Each record's leaf, recomputed from it, against ``checkpoint``'s root by its inclusion
    proof: a failed finding per record that has none or does not verify, else one that says
    all did (the checkpoint's signature is the caller's to check)."""
    by_event = {(p.stream, p.version): p for p in proofs}
    findings = []
    for record in records:
        proof = by_event.get((record.stream, record.version))
        if proof is None:
            findings.append(
                Finding(LOG, False, f"{source} has no inclusion proof for it", record.name)
            )
        elif not verify_inclusion(
            proof.leaf_index,
            checkpoint.size,
            leaf_hash(leaf_data(record)),
            proof.hashes,
            checkpoint.root,
        ):
            findings.append(
                Finding(
                    LOG,
                    False,
                    f"it is not what the signed log holds at leaf {proof.leaf_index} (position "
                    f"{proof.position}): it was changed after it was logged, or the proof is "
                    "wrong",
                    record.name,
                )
            )
    if findings:
        return findings
    return [
        Finding(
            LOG,
            True,
            f"each of the {len(records)} events is in the checkpoint's tree: its leaf, "
            f"recomputed from {source}, verifies by its inclusion proof",
        )
    ]


def _consistent(earlier: Checkpoint, checkpoint: Checkpoint, log: LogEvidence) -> Finding:
    if earlier.origin != checkpoint.origin:
        return Finding(
            LOG,
            False,
            f"the earlier checkpoint is of the log {earlier.origin}, not {checkpoint.origin}",
        )
    if earlier.size > checkpoint.size:
        return Finding(
            LOG,
            False,
            f"the document's checkpoint ({checkpoint.size} events) is older than the earlier "
            f"one ({earlier.size}): export the round again",
        )
    if earlier.size != checkpoint.size and log.earlier_size != earlier.size:
        return Finding(
            LOG,
            False,
            f"the document carries no consistency proof from the earlier checkpoint's "
            f"{earlier.size} events: export it again asking for one",
        )
    # At one size the roots are compared: a proof the document carries is from another size.
    proof = log.consistency if earlier.size != checkpoint.size else ()
    if not verify_consistency(earlier.size, checkpoint.size, earlier.root, checkpoint.root, proof):
        return Finding(
            LOG,
            False,
            f"the log signed now ({checkpoint.size} events) does not extend the earlier "
            f"checkpoint ({earlier.size} events): the log's history was rewritten",
        )
    return Finding(
        LOG,
        True,
        f"the checkpoint extends the earlier one ({earlier.size} events): its consistency "
        "proof verifies, so no logged event was changed since",
    )
