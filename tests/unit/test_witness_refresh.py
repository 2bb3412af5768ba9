"""``thirteen witness`` on an idle log (``service.witness.polling.poll``, clock injected): it
cosigns the same checkpoint again, with a new time, once its cosignature is ``REFRESH_AFTER``
old, so the log (which refuses cosignatures more than a day old) always has a recent one. A
hand-written fake stands for the log: it keeps the newest line per witness, as the server."""

from __future__ import annotations

from pathlib import Path

import pytest

from domain.tlog.checkpoint import Checkpoint, cosignatures, sign_checkpoint
from domain.tlog.note import COSIGNATURE_V1, Signer, parse
from service.witness.polling import REFRESH_AFTER, Log, poll
from service.witness.state import State

T0 = 1_700_000_000


class IdleLog(Log):
    """A log that never grows: one signed checkpoint, and the cosignatures handed back."""

    def __init__(self, key: Signer) -> None:
        self.note = sign_checkpoint(Checkpoint(key.name, 5, bytes(range(32))), key)
        self.lines: dict[str, str] = {}  # per witness key, its line
        self.handed: list[str] = []

    def checkpoint(self) -> str:
        return self.note + "".join(self.lines.values())

    def consistency(self, old: int, new: int) -> tuple[int, int, list[bytes]]:
        raise AssertionError("an idle log is never asked for a consistency proof")

    def add_cosignature(self, note: str) -> None:
        self.handed.append(note)
        log_key = parse(self.note).signatures[0]
        for line in parse(note).signatures:
            if (line.name, line.key_id) != (log_key.name, log_key.key_id):
                self.lines[line.name] = line.line


@pytest.fixture
def keys() -> tuple[Signer, Signer]:
    log_key = Signer.from_seed("thirteen.test/log", bytes(32))
    witness = Signer.from_seed("witness.test/w1", bytes(range(32)), COSIGNATURE_V1)
    return log_key, witness


def times(log: IdleLog, witness: Signer) -> list[int]:
    return [c.time for c in cosignatures(log.checkpoint(), [witness.verifier])]


def test_an_idle_log_is_cosigned_again_once_the_cosignature_is_an_hour_old(
    tmp_path: Path, keys: tuple[Signer, Signer]
) -> None:
    log_key, witness = keys
    log = IdleLog(log_key)
    state = State(tmp_path / "state", log_key.verifier)

    first = poll(log, log_key.verifier, witness, state, now=T0)
    assert first.startswith("cosigned size 5 ") and times(log, witness) == [T0]

    just_before = poll(log, log_key.verifier, witness, state, now=T0 + REFRESH_AFTER - 1)
    assert just_before.startswith("nothing new: size 5 ")
    assert len(log.handed) == 1 and times(log, witness) == [T0]

    due = poll(log, log_key.verifier, witness, state, now=T0 + REFRESH_AFTER)
    assert due.startswith("cosigned size 5 ")
    assert f"again (the log has not grown; its cosignature was {REFRESH_AFTER} s old)" in due
    assert len(log.handed) == 2 and times(log, witness) == [T0 + REFRESH_AFTER]
    assert state.latest == Checkpoint("thirteen.test/log", 5, bytes(range(32)))

    after = poll(log, log_key.verifier, witness, state, now=T0 + REFRESH_AFTER + 60)
    assert after.startswith("nothing new") and len(log.handed) == 2


def test_the_refresh_is_well_inside_the_day_the_log_accepts_cosignatures_for() -> None:
    from domain.tlog.checkpoint import COSIGNATURE_BEHIND

    assert REFRESH_AFTER * 12 <= COSIGNATURE_BEHIND


def test_another_witness_line_does_not_count_as_its_own(
    tmp_path: Path, keys: tuple[Signer, Signer]
) -> None:
    log_key, witness = keys
    other = Signer.from_seed("witness.test/w2", bytes(range(1, 33)), COSIGNATURE_V1)
    log = IdleLog(log_key)
    poll(log, log_key.verifier, other, State(tmp_path / "other", log_key.verifier), now=T0)
    state = State(tmp_path / "state", log_key.verifier)
    state.save(log.note, Checkpoint("thirteen.test/log", 5, bytes(range(32))))

    done = poll(log, log_key.verifier, witness, state, now=T0 + 1)
    assert done.startswith("cosigned size 5 ") and "again" not in done
    assert times(log, witness) == [T0 + 1]
