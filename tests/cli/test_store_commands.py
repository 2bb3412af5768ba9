"""Commands that read a store refuse a data directory without one, rather than creating an
empty store and reporting on nothing."""

import shutil
from pathlib import Path

import pytest

from tests.support.cli import thirteen

from .conftest import run


@pytest.mark.parametrize(
    "command", [["audit", "--all"], ["audit", "--round", "r1"], ["projections", "rebuild"]]
)
def test_a_missing_store_is_exit_2_with_one_line(
    command: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("THIRTEEN_STORE", "sqlite")
    missing = tmp_path / "nothing-here"
    out = run([*command, "--data", str(missing)])
    assert out.status == 2
    assert f"no event store in {missing}" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not missing.exists()


def test_audit_receipt_belongs_to_one_round(tmp_path: Path) -> None:
    out = run(["audit", "--all", "--receipt", "ab" * 32, "--data", str(tmp_path)])
    assert out.status == 2
    assert "--receipt belongs to one round" in out.stderr


def test_audit_of_an_empty_round_id_audits_no_other_round(tmp_path: Path) -> None:
    """An auditor naming one round, even an empty id, never gets every round's verdict."""
    store = tmp_path / "store"
    shutil.copytree(Path(__file__).parents[1] / "fixtures" / "v1_store", store)
    out = run(["audit", "--round", "", "--data", str(store)])
    assert out.status == 2
    assert "round '' does not exist" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("command", ["backup", "restore"])
def test_an_unknown_store_kind_is_named_not_taken_for_postgresql(
    command: str, tmp_path: Path
) -> None:
    """``THIRTEEN_STORE=mongo``: backup and restore said how to copy a PostgreSQL store (found by
    the attack on issue 20; present before it); now the setting is named as ``serve`` names it."""
    source = tmp_path / "backup"
    source.mkdir()
    arguments = [str(tmp_path / "copy")] if command == "backup" else [str(source)]
    out = thirteen(
        command, *arguments, "--data", tmp_path / "data", env={"THIRTEEN_STORE": "mongo"}
    )
    assert out.returncode == 2, out.stderr
    assert "THIRTEEN_STORE must be one of sqlite, postgres, got 'mongo'" in out.stderr
    assert "pg_dump" not in out.stderr and "Traceback" not in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "copy").exists() and not (tmp_path / "data").exists()
