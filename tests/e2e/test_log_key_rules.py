"""The log key follows the seed key's rules (issue 23, finding 1): a PostgreSQL replica started
without the log's key file made a new ``log.key`` under a new name and signed the store's log
with it, and a SQLite store whose key file was gone got a new log key silently. Now ``serve``
makes a log key only for a new SQLite log, and writes its public key beside it (``log.pub``,
what the docs give ``--log-public-key``); everywhere else a missing key file, or a key of
another name than the log's, stops it with exit status 2 and one line."""

from __future__ import annotations

from pathlib import Path

import grpc

from service._generated.thirteen.v1 import transparency_pb2
from service.transparency.keys import read_signer
from tests.e2e.helpers import credit, wait_until
from tests.support.cli import thirteen
from tests.support.seed_key import ensure_seed_key
from tests.support.serve_process import ServeProcess

FAST = ("--checkpoint-interval", "0.2")


def refused(done: object) -> str:
    """The one line of a refusal (the JSON log lines aside)."""
    import subprocess

    assert isinstance(done, subprocess.CompletedProcess)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = [x for x in done.stderr.strip().splitlines() if not x.startswith("{")]
    assert len(lines) == 1, done.stderr
    return str(lines[0])


def signed_once(server: ServeProcess) -> str:
    """The log's name, once a checkpoint is signed."""
    credit(server, "ann", 100, "in-ann")

    def checkpoint() -> str | None:
        try:
            answer = server.transparency.GetCheckpoint(transparency_pb2.GetCheckpointRequest())
        except grpc.RpcError:  # none signed yet
            return None
        return answer.checkpoint.split("\n", 1)[0] if answer.checkpoint else None

    return wait_until(checkpoint, "a signed checkpoint")


def serve_once(data: Path, store: dict[str, str], *extra: str) -> object:
    ensure_seed_key(data / "seed.key")
    return thirteen(
        "serve", "--address", "127.0.0.1:0", "--data", data, *extra, env=store, timeout=60
    )


def test_a_server_without_the_logs_key_file_is_refused_once_the_log_has_checkpoints(
    tmp_path: Path, store: dict[str, str]
) -> None:
    first_data = tmp_path / "first"
    first = ServeProcess(first_data, *FAST, environ=store)
    try:
        name = signed_once(first)
        key = read_signer(first_data / "log.key")
        assert key.name == name
        if store["THIRTEEN_STORE"] == "sqlite":  # made by serve, with its public key beside it
            assert (first_data / "log.pub").read_text().strip() == key.verifier.vkey
            first.stop()
            (first_data / "log.key").rename(tmp_path / "elsewhere.key")
            other = first_data  # the same directory, its key file gone
        else:  # a replica of its own directory beside the first, which goes on serving
            other = tmp_path / "replica"
        line = refused(serve_once(other, store, *FAST))
        assert f"log key file {other / 'log.key'} does not exist, but the store already " in line
        assert f"checkpoints of log {name} (" in line
        assert "--log-key DIR/log.key --new-log" in line
        assert not (other / "log.key").exists()

        another = tmp_path / "another"
        assert thirteen("keys", "init", another).returncode == 0
        line = refused(serve_once(other, store, "--log-key", str(another / "log.key"), *FAST))
        assert f"but this store's log is {name}" in line
    finally:
        first.stop()


def test_a_postgresql_server_without_a_log_key_file_is_told_how_to_make_it(
    tmp_path: Path, store: dict[str, str]
) -> None:
    if store["THIRTEEN_STORE"] != "postgres":
        return  # on SQLite the first start of a new log makes it (above)
    data = tmp_path / "data"
    line = refused(serve_once(data, store))
    assert line == (
        f"thirteen serve: log key file {data / 'log.key'} does not exist: create it once with "
        f"`thirteen keys init {data}` and give every server of the store that file (--log-key "
        f"{data / 'log.key'})"
    )
    assert not (data / "log.key").exists()
