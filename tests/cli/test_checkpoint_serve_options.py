"""``thirteen serve``'s transparency log options (issue 12), refused with one line and exit status
2 before anything is served: a checkpoint interval outside 0.1–60 seconds (``inf``, ``nan``,
negative, 0, absurd), and a log key that is not the one that signed the store's checkpoints
under its name (a restored or rotated key must get a new name)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from domain.tlog.note import Signer
from service.opening import open_app
from service.transparency.keys import write_signer
from service.transparency.log import TransparencyLog
from tests.support.seed_key import ensure_seed_key

SCRIPT = Path(sys.executable).parent / "thirteen"
SQLITE = {"THIRTEEN_STORE": "sqlite"}
NAME = "thirteen.test/log"


def serve(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(data), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **SQLITE},
    )


def one_line_refusal(done: subprocess.CompletedProcess[str]) -> str:
    """The refusal's line (the service's structured log lines, JSON, aside)."""
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.strip().splitlines() if not line.startswith("{")]
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("interval", ["inf", "-inf", "nan", "-1", "0", "0.05", "61", "1e308", "x"])
def test_a_checkpoint_interval_outside_a_tenth_of_a_second_to_a_minute_is_refused(
    tmp_path: Path, interval: str
) -> None:
    data = tmp_path / "data"
    line = one_line_refusal(serve(data, f"--checkpoint-interval={interval}"))
    assert "checkpoint interval must be a number of seconds from 0.1 to 60" in line
    assert not data.exists()  # refused before the store or any key is made


def signed_store(data: Path, key: Signer) -> None:
    """A store whose log holds a checkpoint signed by ``key``."""
    ensure_seed_key(data / "seed.key")
    app = open_app(data, environ=SQLITE)
    try:
        log = TransparencyLog(app, key, checkpoint_interval=0.0)
        log.create()
        for n in range(3):
            app.credit(f"p{n}", 100, f"t-{n}")
        log.append_once()
        assert log.sign_if_due() is not None
    finally:
        app.close()


def test_a_log_key_swapped_under_the_same_name_is_refused_at_start(tmp_path: Path) -> None:
    data = tmp_path / "data"
    signed_store(data, Signer.from_seed(NAME, bytes(32)))
    swapped = tmp_path / "swapped.key"
    write_signer(swapped, Signer.from_seed(NAME, bytes(range(32))))
    line = one_line_refusal(serve(data, "--log-key", str(swapped)))
    assert f"the log key {swapped} cannot sign this store's log" in line
    assert f"the last checkpoint of log {NAME} (" in line
    assert "events) was signed by another key of that name" in line
    assert "needs a new name (thirteen keys init DIR --name NEW" in line


def test_a_key_of_another_name_than_the_logs_is_refused_without_new_log(tmp_path: Path) -> None:
    """Issue 23: a replica given another key than the log's would sign the store's log under
    another name; only ``--new-log`` says that this is meant."""
    data = tmp_path / "data"
    signed_store(data, Signer.from_seed(NAME, bytes(32)))
    renamed = tmp_path / "renamed.key"
    write_signer(renamed, Signer.from_seed(NAME + "-2", bytes(range(32))))
    line = one_line_refusal(serve(data, "--log-key", str(renamed)))
    assert f"the log key {renamed} is named {NAME}-2, but this store's log is {NAME}" in line
    assert "--log-key DIR/log.key --new-log" in line


def test_a_restored_key_under_a_new_name_starts_another_log(tmp_path: Path) -> None:
    """The remedy the refusal names: with ``--new-log`` the server starts, and says the log's
    name changed."""
    data = tmp_path / "data"
    signed_store(data, Signer.from_seed(NAME, bytes(32)))
    renamed = tmp_path / "renamed.key"
    write_signer(renamed, Signer.from_seed(NAME + "-2", bytes(range(32))))
    process = subprocess.Popen(
        [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(data)]  # noqa: RUF005
        + ["--log-key", str(renamed), "--checkpoint-interval", "0.1", "--new-log"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **SQLITE},
    )
    started = threading.Event()

    def read() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            if "serving gRPC on" in line:
                started.set()

    threading.Thread(target=read, daemon=True).start()
    try:
        assert started.wait(60) and process.poll() is None
    finally:
        process.terminate()
        process.wait(timeout=30)
