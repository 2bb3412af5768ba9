"""``domain.tlog.evidence.check_log``: the offline audit's ``LOG`` findings about an export's
events against its signed checkpoint, and against an earlier checkpoint the auditor kept."""

from __future__ import annotations

from domain.findings import Finding
from domain.tlog import merkle
from domain.tlog.chain import StoredRecord
from domain.tlog.checkpoint import Checkpoint, cosign, sign_checkpoint
from domain.tlog.evidence import (
    EventProof,
    LogEvidence,
    check_cosignatures,
    check_log,
    leaf_data,
)
from domain.tlog.note import COSIGNATURE_V1, Signer

LOG_KEY = Signer.from_seed("thirteen.test/log", bytes(range(32)))
STREAM = "6f1c7e2a-0000-4000-8000-000000000001"


def record(version: int) -> StoredRecord:
    return StoredRecord(version, STREAM, version, "domain.wallet:Wallet.Credited", {"n": version})


RECORDS = [record(v) for v in range(1, 8)]
LEAVES = [merkle.leaf_hash(leaf_data(r)) for r in RECORDS]


def lookup(node: merkle.Node) -> bytes:
    return merkle.subtree_root(LEAVES, node)


def head(size: int) -> Checkpoint:
    return Checkpoint(LOG_KEY.name, size, merkle.root(LEAVES[:size]))


def evidence(size: int, earlier: int = 0) -> LogEvidence:
    """The log section of an export of the first ``size`` records, signed at ``size``."""
    proofs = tuple(
        EventProof(
            r.stream, r.version, r.position, i, tuple(merkle.inclusion_proof(i, size, lookup))
        )
        for i, r in enumerate(RECORDS[:size])
    )
    consistency = tuple(merkle.consistency_proof(earlier, size, lookup)) if earlier else ()
    return LogEvidence(sign_checkpoint(head(size), LOG_KEY), proofs, earlier, consistency)


def failed(findings: list[Finding]) -> list[str]:
    return [f.message for f in findings if not f.ok]


def test_an_export_proven_in_its_signed_checkpoint_and_extending_an_earlier_one_passes() -> None:
    findings = check_log(RECORDS[:6], evidence(6, earlier=4), LOG_KEY.verifier, head(4))
    assert not failed(findings)
    assert "extends the earlier one (4 events)" in findings[-1].message


def test_an_earlier_checkpoint_of_the_same_size_needs_no_proof_whatever_the_export_carries() -> (
    None
):
    """An export made with a consistency proof from some other size, audited against a kept
    checkpoint of its own size: the roots are compared, the unrelated proof is not used."""
    same = check_log(RECORDS[:6], evidence(6, earlier=3), LOG_KEY.verifier, head(6))
    assert not failed(same), failed(same)
    forked = Checkpoint(LOG_KEY.name, 6, bytes(32))
    caught = check_log(RECORDS[:6], evidence(6, earlier=3), LOG_KEY.verifier, forked)
    assert any("does not extend the earlier checkpoint" in m for m in failed(caught)), caught


def test_an_event_changed_after_it_was_logged_fails_by_name() -> None:
    changed = [*RECORDS[:2], StoredRecord(3, STREAM, 3, RECORDS[2].topic, {"n": 99})]
    findings = check_log(changed, evidence(3), LOG_KEY.verifier)
    (message,) = failed(findings)
    assert "not what the signed log holds at leaf 2" in message
    assert [f.event for f in findings if not f.ok] == [changed[2].name]


def test_an_earlier_checkpoint_the_export_has_no_proof_from_fails() -> None:
    findings = check_log(RECORDS[:6], evidence(6), LOG_KEY.verifier, head(4))
    assert any("carries no consistency proof" in m for m in failed(findings)), findings


# Witnesses' cosignatures (``check_cosignatures``) ----------------------------------------------

W1 = Signer.from_seed("witness.test/w1", bytes(range(1, 33)), COSIGNATURE_V1)
W2 = Signer.from_seed("witness.test/w2", bytes(range(2, 34)), COSIGNATURE_V1)


def cosigned(*witnesses: Signer, time: int = 1_700_000_000) -> LogEvidence:
    log = evidence(5)
    lines = "".join(cosign(head(5), time, w) for w in witnesses)
    return LogEvidence(log.checkpoint + lines, log.proofs)


def test_a_checkpoint_cosigned_by_every_witness_given_passes_and_names_them() -> None:
    [finding] = check_cosignatures(cosigned(W1, W2), [W1.verifier, W2.verifier])
    assert finding.ok and finding.rule == "LOG"
    assert "cosigned by 2 of the 2 witnesses given (2 required)" in finding.message
    assert "witness.test/w1 (time 1700000000)" in finding.message


def test_a_missing_witness_fails_by_name_unless_fewer_are_required() -> None:
    [missing] = check_cosignatures(cosigned(W1), [W1.verifier, W2.verifier])
    assert not missing.ok and "not by witness.test/w2 (no cosignature by it)" in missing.message
    [enough] = check_cosignatures(cosigned(W1), [W1.verifier, W2.verifier], 1)
    assert enough.ok and "not by witness.test/w2" in enough.message


def test_a_cosignature_over_another_checkpoint_or_time_is_invalid() -> None:
    log = evidence(5)
    moved = cosign(head(4), 1_700_000_000, W1)  # a line made for another tree
    [finding] = check_cosignatures(LogEvidence(log.checkpoint + moved, log.proofs), [W1.verifier])
    assert not finding.ok
    assert "witness.test/w1 (invalid: the cosignature of 'witness.test/w1' does not verify)" in (
        finding.message
    )


def test_a_log_key_given_as_a_witness_key_is_refused_not_trusted() -> None:
    [finding] = check_cosignatures(cosigned(W1), [LOG_KEY.verifier])
    assert not finding.ok and "not a witness key" in finding.message


def test_without_witness_keys_the_audit_says_cosignatures_were_not_checked() -> None:
    [note] = check_cosignatures(cosigned(W1), [])
    assert note.ok and "cosignatures were not checked" in note.message
    assert check_cosignatures(None, []) == []
    [none] = check_cosignatures(None, [W1.verifier])
    assert not none.ok and "no checkpoint" in none.message
