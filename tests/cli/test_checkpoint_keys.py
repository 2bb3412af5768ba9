"""``thirteen keys``: the key files it writes are read back whatever a valid key name holds (a
signed-note name may hold ``#``, which also starts a comment in a key file), and a file that
cannot be read says why in its own words."""

from __future__ import annotations

from pathlib import Path

from tests.support.cli import thirteen


def test_a_key_named_with_a_hash_sign_is_read_back_by_keys_show_and_as_a_public_key(
    tmp_path: Path,
) -> None:
    for extra, stem in (([], "log"), (["--witness"], "witness")):
        made = thirteen("keys", "init", str(tmp_path / stem), "--name", "ex.test/a#b", *extra)
        assert made.returncode == 0, made.stderr
        vkey = (tmp_path / stem / f"{stem}.pub").read_text(encoding="utf-8").strip()
        assert vkey.startswith("ex.test/a#b+")
        shown = thirteen("keys", "show", str(tmp_path / stem / f"{stem}.key"))
        assert shown.returncode == 0, shown.stderr
        assert shown.stdout.strip() == vkey
    audited = thirteen(
        "audit",
        "--file",
        str(tmp_path / "none.json"),
        "--log-public-key",
        str(tmp_path / "log" / "log.pub"),
    )
    # The public key file is read first: only the missing export is left to complain about.
    assert "cannot read" in audited.stderr and "public key" not in audited.stderr, audited.stderr


def test_a_comment_after_a_key_is_still_a_comment(tmp_path: Path) -> None:
    made = thirteen("keys", "init", str(tmp_path), "--name", "ex.test/log")
    assert made.returncode == 0, made.stderr
    public = tmp_path / "log.pub"
    vkey = public.read_text(encoding="utf-8").strip()
    public.write_text(f"# the log's key\n{vkey}  # from the operator\n", encoding="utf-8")
    audited = thirteen(
        "audit", "--file", str(tmp_path / "none.json"), "--log-public-key", str(public)
    )
    assert "cannot read" in audited.stderr and "public key" not in audited.stderr, audited.stderr


def test_keys_show_says_why_a_log_key_file_cannot_be_read(tmp_path: Path) -> None:
    broken = tmp_path / "log.key"
    broken.write_text("PRIVATE+KEY+ex.test/log+00000000+AAAA\n", encoding="utf-8")
    shown = thirteen("keys", "show", str(broken))
    assert shown.returncode == 2
    (line,) = shown.stderr.strip().splitlines()
    assert f"key file {broken}" in line and "witness key file" not in line, line
