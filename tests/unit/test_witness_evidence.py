"""A witness keeps the checkpoints it refused as evidence, each once and at most
``MAX_EVIDENCE`` per log: a log holding its key could otherwise fill the witness's disk with
inconsistent checkpoints (found by issue 24's attack)."""

from __future__ import annotations

from pathlib import Path

import pytest

from domain.tlog.checkpoint import Checkpoint
from domain.tlog.note import Signer
from service.witness import state as witness_state
from service.witness.state import EVIDENCE_DIR, State


def test_evidence_is_kept_once_each_and_at_most_max_evidence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(witness_state, "MAX_EVIDENCE", 3)
    log_key = Signer.from_seed("example.org/log", bytes(32)).verifier
    state = State(tmp_path / "w", log_key)
    lies = [Checkpoint("example.org/log", 10, bytes([n]) * 32) for n in range(5)]
    kept = [state.keep(f"note {n}\n", lie) for n, lie in enumerate(lies)]
    assert kept[3:] == ["not kept (3 pieces of evidence are kept already)"] * 2
    assert state.keep("note 0\n", lies[0]) == kept[0]  # the same checkpoint: where it is
    files = sorted((tmp_path / "w" / EVIDENCE_DIR).iterdir())
    assert [f.read_text() for f in files] == ["note 0\n", "note 1\n", "note 2\n"]
