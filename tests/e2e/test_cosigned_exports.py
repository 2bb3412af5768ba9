"""Issue 12: witnesses' cosignatures reach auditors. ``thirteen serve`` and ``thirteen witness``
run as processes of their own; an export of a round carries the newest checkpoint covering it
that the witness cosigned (not the latest, which the log signs more often than a witness
polls), and ``thirteen audit --file --witness-key`` checks that cosignature offline."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from service._generated.thirteen.v1 import audit_pb2_grpc
from tests.e2e.helpers import seated_table, wait_until
from tests.e2e.test_transparency import (
    PLAYERS,
    SCRIPT,
    checkpoint,
    export,
    play_round,
    signed_head,
)
from tests.e2e.test_witness import Serve, Setup, cosigned_at, keys, settled_head
from tests.support.tlog import read_checkpoint


def audit_file(
    document: dict[str, Any], tmp: Path, *flags: str
) -> subprocess.CompletedProcess[str]:
    path = tmp / "export.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return subprocess.run(
        [str(SCRIPT), "audit", "--file", str(path), *flags],
        capture_output=True,
        text=True,
        timeout=60,
    )


def audit_store(environ: dict[str, str], *flags: str) -> subprocess.CompletedProcess[str]:
    """``thirteen audit`` of the store ``environ`` selects, run to its end."""
    return subprocess.run(
        [str(SCRIPT), "audit", *flags],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **environ},
    )


def tamper_cosignature(document: dict[str, Any], witness_name: str) -> dict[str, Any]:
    """The document with one bit of the witness's cosignature (not its key id) flipped."""
    lines = document["log"]["checkpoint"].split("\n")
    for at, line in enumerate(lines):
        dash, name, encoded = [*line.split(" "), "", "", ""][:3]
        if dash == "\u2014" and name == witness_name:
            raw = bytearray(base64.b64decode(encoded))
            raw[-1] ^= 1
            lines[at] = f"{dash} {name} {base64.b64encode(bytes(raw)).decode()}"
            break
    else:
        raise AssertionError(f"no cosignature by {witness_name}")
    log = {**document["log"], "checkpoint": "\n".join(lines)}
    return {**document, "log": log}


@pytest.fixture
def witnessed(tmp_path: Path, store: dict[str, str]) -> Iterator[Setup]:
    """A log key and a witness's key pair, for ``thirteen serve`` on SQLite, then PostgreSQL."""
    log_pub = keys(tmp_path / "log", "--name", "thirteen.test/log")
    witness_pub = keys(tmp_path / "w", "--witness", "--name", "witness.test/w1")
    yield Setup(tmp_path, log_pub, witness_pub, store)


def serve(setup: Setup) -> Serve:
    server = setup.serve()
    server.audit = audit_pb2_grpc.AuditServiceStub(server.channel)
    return server


def test_an_export_carries_the_cosigned_checkpoint_and_the_audit_checks_the_witness(
    witnessed: Setup,
) -> None:
    setup = witnessed
    other_pub = keys(setup.tmp / "w2", "--witness", "--name", "witness.test/w2")
    witness_file = str(setup.tmp / "w" / "witness.pub")
    server = serve(setup)
    try:
        seated_table(server, "t1", PLAYERS)
        first = play_round(server, "t1")
        head = settled_head(server, setup.log_pub, 1)
        cosigned = setup.witness(server)
        assert cosigned.status == 0 and "cosigned" in cosigned.stdout, cosigned.stderr
        # The log grows past the cosigned checkpoint; the witness has not seen it yet.
        second = play_round(server, "t1")
        latest = signed_head(server, setup.log_pub, head.size + 1)
        assert cosigned_at(checkpoint(server), setup.witness_pub) is None  # GetCheckpoint: latest

        document = export(server, first)
        shown = read_checkpoint(document["log"]["checkpoint"])
        assert (shown.size, shown.root) == (head.size, head.root)  # not the latest
        assert cosigned_at(document["log"]["checkpoint"], setup.witness_pub) is not None

        passed = audit_file(
            document, setup.tmp, "--log-public-key", setup.log_pub, "--witness-key", witness_file
        )
        assert passed.returncode == 0, passed.stdout + passed.stderr
        assert "cosigned by 1 of the 1 witnesses given (1 required): witness.test/w1" in (
            passed.stdout
        )
        # The store itself (issue 22): its newest cosigned checkpoint, by the witness given.
        store_flags = (
            "--all",
            "--json",
            "--data",
            str(setup.data),
            "--log-public-key",
            setup.log_pub,
        )
        stored = audit_store(setup.environ, *store_flags, "--witness-key", witness_file)
        assert stored.returncode == 0, stored.stdout + stored.stderr
        assert "cosigned by 1 of the 1 witnesses given" in stored.stdout
        stranger = audit_store(setup.environ, *store_flags, "--witness-key", other_pub)
        assert stranger.returncode == 1 and "not by witness.test/w2" in stranger.stdout

        unchecked = audit_file(document, setup.tmp, "--log-public-key", setup.log_pub)
        assert unchecked.returncode == 0, unchecked.stdout
        assert "cosignatures were not checked" in unchecked.stdout

        other = audit_file(
            document, setup.tmp, "--log-public-key", setup.log_pub, "--witness-key", other_pub
        )
        assert other.returncode == 1, other.stdout
        failing = [line for line in other.stdout.splitlines() if line.startswith("  FAIL")]
        assert len(failing) == 1 and "LOG" in failing[0], other.stdout
        assert "not by witness.test/w2 (no cosignature by it)" in failing[0]

        both = ("--witness-key", witness_file, "--witness-key", other_pub)
        all_of_them = audit_file(document, setup.tmp, "--log-public-key", setup.log_pub, *both)
        assert all_of_them.returncode == 1, all_of_them.stdout
        one_of_them = audit_file(
            document, setup.tmp, "--log-public-key", setup.log_pub, *both,
            "--witnesses-required", "1",
        )  # fmt: skip
        assert one_of_them.returncode == 0, one_of_them.stdout
        assert "not by witness.test/w2" in one_of_them.stdout

        forged = tamper_cosignature(document, "witness.test/w1")
        tampered = audit_file(
            forged, setup.tmp, "--log-public-key", setup.log_pub, "--witness-key", witness_file
        )
        assert tampered.returncode == 1, tampered.stdout
        invalid = "witness.test/w1 (invalid: the cosignature of 'witness.test/w1' does not verify)"
        assert invalid in tampered.stdout

        # A round after the cosigned checkpoint: the latest covering one, not cosigned.
        later = export(server, second)
        assert read_checkpoint(later["log"]["checkpoint"]).size >= latest.size
        uncosigned = audit_file(
            later, setup.tmp, "--log-public-key", setup.log_pub, "--witness-key", witness_file
        )
        assert uncosigned.returncode == 1
        assert "not by witness.test/w1 (no cosignature by it)" in uncosigned.stdout

        # A caller's earlier checkpoint beyond the cosigned one: the export must extend it.
        extended = export(server, first, earlier=latest.size)
        assert read_checkpoint(extended["log"]["checkpoint"]).size >= latest.size

        # Once the witness cosigns the newer checkpoint, exports of both rounds carry it.
        newest = settled_head(server, setup.log_pub, latest.size)
        again = setup.witness(server)
        assert again.status == 0 and "cosigned" in again.stdout, again.stderr
        wait_until(
            lambda: cosigned_at(checkpoint(server), setup.witness_pub), "the cosignature", 30
        )
        for round_id in (first, second):
            shown = read_checkpoint(export(server, round_id)["log"]["checkpoint"])
            assert (shown.size, shown.root) == (newest.size, newest.root)
    finally:
        server.stop()


def test_the_witness_flags_are_one_line_and_exit_status_2_when_unusable(tmp_path: Path) -> None:
    log_pub = keys(tmp_path / "log", "--name", "thirteen.test/log")
    witness_pub = keys(tmp_path / "w", "--witness", "--name", "witness.test/w1")
    export_file = tmp_path / "export.json"
    export_file.write_text("{}", encoding="utf-8")

    def audit(*flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([str(SCRIPT), "audit", *flags], capture_output=True, text=True)

    cases = {
        ("--data", str(tmp_path), "--round", "r", "--witness-key", witness_pub): "give --all",
        ("--file", str(export_file), "--witness-key", "not-a-key"): "--witness-key: ",
        ("--file", str(export_file), "--witness-key", log_pub): "is not a witness key",
        ("--file", str(export_file), "--witnesses-required", "1"): "needs --witness-key",
        (
            "--file",
            str(export_file),
            "--witness-key",
            witness_pub,
            "--witnesses-required",
            "2",
        ): "give a number from 1 to 1",
    }
    for flags, words in cases.items():
        done = audit(*flags)
        assert done.returncode == 2, (flags, done.stdout, done.stderr)
        assert words in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
        assert "Traceback" not in done.stderr
