"""``thirteen serve`` refuses, with one line and exit status 2, setups that would hand out more
than intended (issue 11): roles on a public address without a policy, a seed key file that is
not there where the server must not make one. And ``thirteen seed-key init``. A port that is
taken is exit status 1."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

from service.seed_keys import read
from tests.support.certs import Authority
from tests.support.cli import thirteen


def one_line_refusal(done: subprocess.CompletedProcess[str], status: int = 2) -> str:
    """The one line ``done`` said on stderr; it exited with ``status`` (2: bad input; 1: a
    well-formed address that cannot be listened on)."""
    assert done.returncode == status, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


def test_tls_on_a_public_address_without_a_policy_is_refused(tmp_path: Path) -> None:
    ca = Authority(tmp_path / "certs")
    server = ca.issue("server", server=True)
    done = thirteen(
        "serve",
        *("--address", "0.0.0.0:0", "--data", str(tmp_path / "data")),
        *("--tls-cert", str(server.cert), "--tls-key", str(server.key)),
    )
    assert "without --policy: every caller would be admin" in one_line_refusal(done)
    assert not (tmp_path / "data").exists()  # refused before the store is opened


def test_a_seed_key_file_given_but_missing_is_refused_not_made(tmp_path: Path) -> None:
    missing = tmp_path / "typo" / "seed.key"
    done = thirteen(
        "serve", "--address", "127.0.0.1:0", "--data", str(tmp_path), "--seed-key", str(missing)
    )
    line = one_line_refusal(done)
    assert f"seed key file {missing} does not exist" in line
    assert f"thirteen seed-key init {missing}" in line
    assert not missing.exists()


def test_on_postgresql_the_default_seed_key_is_not_made_either(tmp_path: Path) -> None:
    done = thirteen(
        "serve",
        *("--address", "127.0.0.1:0", "--data", str(tmp_path)),
        env={"THIRTEEN_STORE": "postgres", "POSTGRES_PORT": "1"},  # refused before connecting
    )
    assert "does not exist" in one_line_refusal(done)
    assert not (tmp_path / "seed.key").exists()


def test_seed_key_init_writes_a_private_key_file_once(tmp_path: Path) -> None:
    path = tmp_path / "keys" / "seed.key"
    done = thirteen("seed-key", "init", str(path))
    assert done.returncode == 0, done.stderr
    ring = read(path)
    assert ring.current in done.stdout
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    again = thirteen("seed-key", "init", str(path))
    assert "never replaced" in one_line_refusal(again)
    assert read(path).current == ring.current


def test_a_grpc_port_that_is_taken_is_one_line_and_status_1(tmp_path: Path) -> None:
    """A well-formed address that cannot be listened on is exit status 1, as for ``--metrics``
    and ``thirteen console``; 2 is for bad input."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        data = tmp_path / "data"
        done = thirteen("serve", "--address", f"127.0.0.1:{port}", "--data", str(data))
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines() == [
        f"thirteen serve: cannot listen on 127.0.0.1:{port}: the address is taken or not ours"
    ]
    assert not data.exists()  # found before the store opened: no directory, no key files
