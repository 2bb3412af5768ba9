"""AuditService through the real server: an exported round audits clean offline, AuditRound
checks a receipt, and nothing secret leaves before a round is over (issue 5 §1–§3, R12.1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import grpc

from service._generated.thirteen.v1 import audit_pb2
from tests.support.server import ServerThread

from .helpers import arrange_well, assert_refused, deal, reveal, seated_table

SCRIPT = Path(sys.executable).parent / "thirteen"


def _revealed_round(server: ServerThread, table_id: str = "aud") -> tuple[str, str]:
    seated_table(server, table_id, {f"{table_id}-a": 500, f"{table_id}-b": 500})
    dealt = deal(server, table_id, client_seed="audit")
    arrange_well(server, dealt)
    revealed = reveal(server, dealt.round_id)
    assert revealed.receipt
    return dealt.round_id, revealed.receipt


def test_an_exported_round_audits_clean_offline_with_its_receipt(
    server: ServerThread, tmp_path: Path
) -> None:
    round_id, receipt = _revealed_round(server)
    document = server.audit.ExportRound(audit_pb2.ExportRoundRequest(round_id=round_id)).document
    data = json.loads(document)
    assert json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False) == document
    assert data["round_id"] == round_id and data["round_events"]
    export = tmp_path / "export.json"
    export.write_text(document)
    done = subprocess.run(
        [str(SCRIPT), "audit", "--file", str(export), "--receipt", receipt],
        capture_output=True,
        text=True,
        timeout=60,
        env=dict(os.environ),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the chain head equals the receipt" in done.stdout
    assert "R12.6" in done.stdout and "FAIL" not in done.stdout


def test_audit_round_checks_every_rule_and_the_receipt(server: ServerThread) -> None:
    round_id, receipt = _revealed_round(server)
    report = server.audit.AuditRound(
        audit_pb2.AuditRoundRequest(round_id=round_id, receipt=receipt)
    )
    assert report.ok
    rules = {f.rule for f in report.findings}
    assert {"CHAIN", "R12", "R12.6", "R4.1", "R6", "R9", "R7.2", "R10.2", "R10.3"} <= rules
    wrong = server.audit.AuditRound(
        audit_pb2.AuditRoundRequest(round_id=round_id, receipt="0" * 64)
    )
    assert not wrong.ok
    assert [f.rule for f in wrong.findings if not f.ok] == ["CHAIN"]


def test_r12_1_a_round_in_progress_cannot_be_exported(server: ServerThread) -> None:
    seated_table(server, "live", {"live-a": 500, "live-b": 500})
    dealt = deal(server, "live")
    assert_refused(
        server.audit.ExportRound,
        audit_pb2.ExportRoundRequest(round_id=dealt.round_id),
        grpc.StatusCode.FAILED_PRECONDITION,
        "WRONG_PHASE",
        field="round_id",
        says="not over yet",
    )
    report = server.audit.AuditRound(audit_pb2.AuditRoundRequest(round_id=dealt.round_id))
    assert report.ok  # what has happened so far is in order, and says no card or seed
    text = " ".join(f.message for f in report.findings)
    for hand in dealt.hands:
        assert not any(card in text.split() for card in hand.cards)


def test_audit_of_unknown_or_empty_round_ids(server: ServerThread) -> None:
    assert_refused(
        server.audit.AuditRound,
        audit_pb2.AuditRoundRequest(round_id="nope"),
        grpc.StatusCode.NOT_FOUND,
        "NOT_FOUND",
    )
    assert_refused(
        server.audit.ExportRound,
        audit_pb2.ExportRoundRequest(round_id=""),
        grpc.StatusCode.INVALID_ARGUMENT,
        "INVALID_ARGUMENT",
        field="round_id",
    )


def test_an_export_relabelled_as_another_round_or_table_fails_the_audit(
    server: ServerThread, tmp_path: Path
) -> None:
    """Found by the issue 12 attack: the document's ``round_id`` and ``table_id`` were bound to
    nothing, so a clean export of one round, relabelled, audited as another."""
    round_id, _ = _revealed_round(server)
    document = server.audit.ExportRound(audit_pb2.ExportRoundRequest(round_id=round_id)).document
    for field, value in [
        ("round_id", "11111111-2222-3333-4444-555555555555"),
        ("table_id", "some-other-table"),
    ]:
        data = json.loads(document)
        data[field] = value
        export = tmp_path / f"{field}.json"
        export.write_text(json.dumps(data))
        done = subprocess.run(
            [str(SCRIPT), "audit", "--file", str(export), "--json"],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ),
        )
        assert done.returncode == 1, field
        (report,) = json.loads(done.stdout)["rounds"]
        findings = report["findings"]
        assert any(f["rule"] == "RECORD" and not f["ok"] for f in findings), field
