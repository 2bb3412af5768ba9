"""Attacks from outside on what landed for issue 23's keys: the real ``thirteen`` command line,
as a hostile or unlucky operator runs it. Each test is one finding and fails on the code as
found: a log key restored from a backup signing a fork, and a witness silenced by an unsigned
checkpoint of another name. Backup and restore are SQLite's (PostgreSQL's is ``pg_dump``)."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc

from service._generated.thirteen.v1 import transparency_pb2, transparency_pb2_grpc
from tests.e2e.helpers import credit, wait_until
from tests.support.cli import thirteen
from tests.support.serve_process import ServeProcess

FAST = ("--checkpoint-interval", "0.2")
REFUSALS = (
    "transparency_log_rewritten",
    "transparency_log_inconsistent",
    "log_key_conflict",
    "log_key_foreign",
)

# The log key through a backup -------------------------------------------------------------


def _checkpoint(server: ServeProcess) -> tuple[str, int] | None:
    """The served checkpoint's (origin, size), or None before one is signed."""
    try:
        note = server.transparency.GetCheckpoint(transparency_pb2.GetCheckpointRequest()).checkpoint
    except grpc.RpcError:
        return None
    if not note:
        return None
    origin, size = note.split("\n")[:2]
    return origin, int(size)


def _signed_past(server: ServeProcess, size: int) -> tuple[str, int] | None:
    found = _checkpoint(server)
    return found if found is not None and found[1] > size else None


def test_a_log_key_restored_with_include_keys_does_not_sign_a_fork(tmp_path: Path) -> None:
    """The documented round trip: ``backup --include-keys`` (the log key is in the data
    directory, its default), the log signs on, the store is lost, ``restore --include-keys``,
    ``serve``. The restored key comes back without its record of what it signed
    (``log.key.signed`` is left out on purpose), so nothing stops it: the restored server signs
    new checkpoints under the old name over a history that lacks what the old log's later
    checkpoints covered: two inconsistent checkpoints by one key, a fork that every witness of
    the log alarms on. Only a printed sentence warns. The log key must not sign a restored
    store under its old name unless the operator says it signed nothing since (or the backup
    must record what lets the log tell)."""
    data = tmp_path / "data"
    first = ServeProcess(data, *FAST)
    try:
        credit(first, "ann", 100, "before-backup")
        at_backup = wait_until(lambda: _checkpoint(first), "a signed checkpoint")
        backup = tmp_path / "backup"
        made = thirteen("backup", "--data", data, backup, "--include-keys")
        assert made.returncode == 0, made.stderr
        in_backup = json.loads((backup / "backup.json").read_text(encoding="utf-8"))
        backed_size = int(in_backup["checkpoint"]["size"])
        for n in range(5):
            credit(first, "bo", 10, f"after-backup-{n}")
        later = wait_until(lambda: _signed_past(first, backed_size), "a checkpoint past the backup")
    finally:
        first.stop()
    assert later[0] == at_backup[0]

    restored = tmp_path / "restored"
    done = thirteen("restore", backup, "--data", restored, "--include-keys")
    assert done.returncode == 0, done.stderr
    second = ServeProcess(restored, *FAST, make_keys=False)
    try:
        for n in range(8):
            credit(second, "cy", 10, f"after-restore-{n}")

        def outcome() -> str | None:
            refused = [x for x in second.lines if any(e in x for e in REFUSALS)]
            if refused:
                return "refused"
            signed = _signed_past(second, backed_size)
            return f"signed {signed}" if signed is not None and signed[0] == later[0] else None

        assert wait_until(outcome, "a signature or a refusal") == "refused", (
            f"the restored key signed under {later[0]} past {backed_size} events, while the old "
            f"log signed {later[1]} events of another history: a fork"
        )
    finally:
        second.stop()


# The witness: a new log or a fork ---------------------------------------------------------


class _Renamed(transparency_pb2_grpc.TransparencyServiceServicer):
    """A log that answers with a checkpoint of another name, signed by nobody."""

    def GetCheckpoint(
        self, request: object, context: object
    ) -> transparency_pb2.GetCheckpointResponse:
        note = "evil.example/log\n1000000\nAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n\n"
        return transparency_pb2.GetCheckpointResponse(checkpoint=note)


def test_a_witness_does_not_call_an_unsigned_checkpoint_of_another_name_a_new_log(
    tmp_path: Path,
) -> None:
    """A witness that has cosigned a log is then served, at the log's address, a checkpoint of
    another name that no key signed (no signature line at all). It says "a new log, not a fork
    of this one", exits 1 (no alarm) and keeps no evidence: whoever answers at the address can
    silence every witness of the log this way, and a log that forks its history under a new
    name is waved through the same. A note that is not even signed proves no new log: it is to
    be kept as evidence and alarmed on (exit status 3), or at least not called "not a fork"."""
    data = tmp_path / "data"
    keys = tmp_path / "w"
    assert thirteen("keys", "init", keys, "--witness").returncode == 0
    state = tmp_path / "state"
    server = ServeProcess(data, *FAST, "--witness-key", str(keys / "witness.pub"))
    try:
        credit(server, "ann", 100, "witnessed")
        wait_until(lambda: _checkpoint(server), "a signed checkpoint")
        log_pub = (data / "log.pub").read_text(encoding="utf-8").strip()
        first = thirteen(
            "witness", "--log", server.address, "--log-public-key", log_pub,
            "--key", keys / "witness.key", "--state", state, "--once", timeout=60,
        )  # fmt: skip
        assert first.returncode == 0, first.stderr
    finally:
        server.stop()
    fake = grpc.server(ThreadPoolExecutor(max_workers=2))
    transparency_pb2_grpc.add_TransparencyServiceServicer_to_server(
        _Renamed(),  # type: ignore[abstract]  # the rest answers UNIMPLEMENTED
        fake,
    )
    port = fake.add_insecure_port("127.0.0.1:0")
    fake.start()
    try:
        seen = thirteen(
            "witness", "--log", f"127.0.0.1:{port}", "--log-public-key", log_pub,
            "--key", keys / "witness.key", "--state", state, "--once", timeout=60,
        )  # fmt: skip
    finally:
        fake.stop(None)
    assert "not a fork" not in seen.stderr, seen.stderr
