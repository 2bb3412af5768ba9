"""The seed key file (``service.seed_keys``, issue 11): created when missing, readable by its
owner only; one key per line, the current one first; a bad file is refused in one line that
quotes no key; a round committed under a key the file lacks is refused and stores nothing;
``thirteen serve`` exits 2 on a bad file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from domain.fairness.seeds import SeedKeyMissing, key_id
from domain.rules.ruleset import STANDARD
from domain.rules.suggest import suggest
from service.opening import open_app
from service.seed_keys import SeedKeyError, load_or_create, read

SCRIPT = Path(sys.executable).parent / "thirteen"
SQLITE = {"THIRTEEN_STORE": "sqlite"}
K1, K2 = bytes(range(32)), bytes(range(1, 33))


def test_a_missing_key_file_is_created_with_one_key_for_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "seed.key"
    with capture_logs() as logs:
        ring = load_or_create(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    lines = [line for line in path.read_text().splitlines() if not line.startswith("#")]
    assert len(lines) == 1 and key_id(bytes.fromhex(lines[0])) == ring.current
    assert read(path) == ring  # the same key when read again
    assert [e["event"] for e in logs] == ["seed_key_created"]
    assert logs[0]["key_id"] == ring.current and lines[0] not in str(logs)
    assert os.listdir(path.parent) == ["seed.key"]  # no draft left beside it


def test_keys_are_one_per_line_with_comments_and_the_first_is_current(tmp_path: Path) -> None:
    path = tmp_path / "seed.key"
    path.write_text(f"# rotated today\n\n  {K2.hex()}  # new\n{K1.hex().upper()}\n")
    path.chmod(0o600)
    ring = read(path)
    assert ring.current == key_id(K2) and ring.ids == (key_id(K2), key_id(K1))


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("zz" * 32, "line 1: not hex"),
        ("# only a comment\n" + "ab" * 31, "line 2: 31 bytes"),
        ("\n# nothing\n", "holds no key"),
        ("é", "is not text"),
    ],
)
def test_a_bad_key_file_is_refused_in_one_line_quoting_no_key(
    tmp_path: Path, text: str, says: str
) -> None:
    path = tmp_path / "seed.key"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(SeedKeyError, match=says) as refused:
        read(path)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message and "zz" * 4 not in message


def test_a_key_file_that_cannot_be_read_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SeedKeyError, match=r"cannot read seed key file .*: Is a directory"):
        read(tmp_path)


def test_a_key_file_others_may_read_is_used_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "seed.key"
    path.write_text(K1.hex() + "\n")
    path.chmod(0o644)
    with capture_logs() as logs:
        ring = read(path)
    assert ring.current == key_id(K1)
    (warning,) = [e for e in logs if e["log_level"] == "warning"]
    assert warning["event"] == "seed_key_file_open_to_others" and warning["mode"] == "0o644"


def _key_file(path: Path, *keys: bytes) -> Path:
    path.write_text("".join(k.hex() + "\n" for k in keys))
    path.chmod(0o600)
    return path


def test_r12_1_a_deal_needing_a_key_the_file_lacks_is_refused_and_stores_nothing(
    tmp_path: Path,
) -> None:
    """A server given the wrong key file names the missing key id and changes nothing; given
    the new key first and the old one kept (a rotation), it deals the committed round and the
    next commitment is made under the new key."""
    data = tmp_path / "data"
    first = open_app(data, environ=SQLITE, seed_key=_key_file(tmp_path / "k1", K1))
    try:
        first.open_table("t", STANDARD)
        for player in "AB":
            first.credit(player, 1000, f"in-{player}")
            first.sit_down("t", player)
    finally:
        first.close()
    wrong = open_app(data, environ=SQLITE, seed_key=_key_file(tmp_path / "k2", K2))
    try:
        before = wrong.max_position()
        with pytest.raises(SeedKeyMissing, match=f"seed key '{key_id(K1)}' is not in"):
            wrong.deal("t", "c")
        assert wrong.max_position() == before and wrong.table("t").current_round is None
    finally:
        wrong.close()
    rotated = open_app(data, environ=SQLITE, seed_key=_key_file(tmp_path / "k21", K2, K1))
    try:
        dealt = rotated.deal("t", "c")
        for player in dealt.players:
            best = suggest(list(dealt.hand(player)), STANDARD).arrangement
            rotated.arrange(dealt.round_id, player, best.front, best.middle, best.back)
        rotated.reveal(dealt.round_id)
        assert rotated.table("t").next_seed_key == key_id(K2)
    finally:
        rotated.close()


def test_serve_refuses_a_bad_key_file_with_exit_status_2_and_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "seed.key"
    bad.write_text("not a key\n")
    command = [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(tmp_path / "d")]
    done = subprocess.run(
        [*command, "--seed-key", str(bad), "--log-level", "warning"],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **SQLITE},
    )
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.strip()
        == f"thirteen serve: seed key file {bad} line 1: not hex; each key is 64 hex digits"
    )
