"""``thirteen keys`` and the log-key flags of ``serve`` and ``audit`` through the real console
script: the files' formats (checked with ``tests.support.tlog``), their modes, and one-line
refusals with exit status 2."""

from __future__ import annotations

import base64
import stat
from pathlib import Path

from tests.support.cli import thirteen
from tests.support.tlog import key_id


def parse_vkey(vkey: str) -> tuple[str, str, int, bytes]:
    name, hex_id, material = vkey.strip().split("+", 2)
    raw = base64.b64decode(material)
    return name, hex_id, raw[0], raw[1:]


def test_keys_init_writes_a_private_key_only_its_owner_reads_and_its_vkey(tmp_path: Path) -> None:
    done = thirteen("keys", "init", str(tmp_path), "--name", "example.org/log")
    assert done.returncode == 0, done.stderr
    private, public = tmp_path / "log.key", tmp_path / "log.pub"
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    name, hex_id, kind, key = parse_vkey(public.read_text())
    assert (name, kind, len(key)) == ("example.org/log", 1, 32)
    assert hex_id == key_id(name, 1, key).hex()
    line = next(x for x in private.read_text().splitlines() if not x.startswith("#"))
    assert line.startswith(f"PRIVATE+KEY+example.org/log+{hex_id}+")
    shown = thirteen("keys", "show", str(private))
    assert shown.returncode == 0 and shown.stdout.strip() == public.read_text().strip()
    again = thirteen("keys", "init", str(tmp_path))
    assert again.returncode == 2 and "never replaced" in again.stderr
    assert line in private.read_text()  # untouched


def test_a_witness_key_is_a_cosignature_key(tmp_path: Path) -> None:
    done = thirteen("keys", "init", str(tmp_path), "--witness")
    assert done.returncode == 0, done.stderr
    name, hex_id, kind, key = parse_vkey((tmp_path / "witness.pub").read_text())
    assert kind == 4 and hex_id == key_id(name, 4, key).hex()


def test_a_bad_name_or_key_file_is_one_line_and_exit_status_2(tmp_path: Path) -> None:
    for name in ("has space", "", "x" * 5_000, "a+b"):  # an empty name is not "random"
        bad_name = thirteen("keys", "init", str(tmp_path), "--name", name)
        assert bad_name.returncode == 2 and len(bad_name.stderr.splitlines()) == 1, name
        assert not (tmp_path / "log.key").exists()
    junk = tmp_path / "junk.key"
    junk.write_text("PRIVATE+KEY+x+00000000+AAAA\n")
    served = thirteen(
        "serve",
        "--address",
        "127.0.0.1:0",
        "--data",
        str(tmp_path / "data"),
        "--log-key",
        str(junk),
    )
    assert served.returncode == 2, served.stderr
    assert served.stderr.splitlines()[-1].startswith("thirteen serve: log key file")
    shown = thirteen("keys", "show", str(junk))
    assert shown.returncode == 2 and "Traceback" not in shown.stderr


def test_the_audit_log_flags_belong_to_an_export(tmp_path: Path) -> None:
    """``--log-public-key`` checks a store's checkpoints too (--round, --all); an earlier
    checkpoint belongs to a whole log, an export's or a store's (issue 22), and needs the key."""
    done = thirteen("audit", "--data", str(tmp_path), "--round", "r", "--earlier-checkpoint", "x")
    assert done.returncode == 2 and "give --all (or --file)" in done.stderr
    keyless = thirteen("audit", "--data", str(tmp_path), "--all", "--earlier-checkpoint", "x")
    assert keyless.returncode == 2 and "needs --log-public-key" in keyless.stderr
    not_key = thirteen("audit", "--data", str(tmp_path), "--all", "--log-public-key", "x+y+z")
    assert not_key.returncode == 2 and "neither a public key" in not_key.stderr
    export = tmp_path / "export.json"
    export.write_text("{}")
    bad_key = thirteen("audit", "--file", str(export), "--log-public-key", "not-a-key")
    assert bad_key.returncode == 2
    assert "neither a public key" in bad_key.stderr
    thirteen("keys", "init", str(tmp_path))
    lonely = thirteen("audit", "--file", str(export), "--earlier-checkpoint", str(export))
    assert lonely.returncode == 2 and "needs --log-public-key" in lonely.stderr
