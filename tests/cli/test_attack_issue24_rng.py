"""Issue 24 attacked from outside: ``thirteen rng test --html`` given the sample it reads, or the
file ``--out`` writes, as the page to write. Failed on the code as it was found."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.support.cli import SCRIPT, thirteen

KEY = "11" * 32


def test_the_reports_never_overwrite_the_sample_they_test_nor_each_other(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--html`` (and ``--out``) naming the file given to ``--file`` wrote the report over the
    sample once it was tested: a collected sample, maybe hours of deals, was gone, with exit
    status 0. Now each is refused with exit status 2 and one line before anything is read or
    written, by whatever name it is given (a relative path, a symbolic link)."""
    dealt = tmp_path / "deals.txt"
    collect = thirteen("rng", "collect", "--deals", "300", "--fixed-seed", KEY, "--out", dealt)
    assert collect.returncode == 0, collect.stderr
    sample = dealt.read_bytes()
    (tmp_path / "link.txt").symlink_to(dealt)
    monkeypatch.chdir(tmp_path)  # the command's working directory too: a relative name
    cases: list[list[str | Path]] = [
        ["--file", dealt, "--html", dealt],
        ["--file", dealt, "--out", "deals.txt"],
        ["--file", "deals.txt", "--html", tmp_path / "link.txt"],
        ["--file", dealt, "--out", tmp_path / "page.html", "--html", "page.html"],
    ]
    for args in cases:
        done = thirteen("rng", "test", *args)
        assert done.returncode == 2, (args, done.stderr)
        line = done.stderr.strip()
        assert "\n" not in line and "the same file" in line and "Traceback" not in line, line
        assert dealt.read_bytes() == sample, args
    assert not (tmp_path / "page.html").exists()


@pytest.mark.parametrize("stderr", ["2>/dev/full", "2>&-"], ids=["full", "closed"])
def test_progress_that_cannot_be_shown_does_not_end_the_run(tmp_path: Path, stderr: str) -> None:
    """``--progress`` on a stderr that cannot be written (a full disk, a closed descriptor)
    ended the run with exit status 1 at its first progress line: no report, no page, however
    long it had run. Progress is a courtesy: it stops being shown, the run goes on."""
    page = tmp_path / "page.html"
    command = (
        f"{SCRIPT} rng test --cards 13520 --repeats 1 --progress --fixed-seed {KEY} "
        f"--html {page} {stderr}"
    )
    done = subprocess.run(
        ["bash", "-c", command], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode in (0, 1), done
    assert "thirteen RNG report" in done.stdout, (done.returncode, done.stdout[-300:])
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_a_page_that_cannot_be_written_at_the_end_loses_no_report(tmp_path: Path) -> None:
    """A page (or ``--out`` file) that passed the check before the run and failed when written
    at its end (a disk that filled meanwhile: ``/dev/full``) ended the command with exit
    status 2 before the report reached stdout: the whole run was lost, and so was the other
    file. Now the report is on stdout, every file that can be written is, and the failure is
    one line (exit status 2)."""
    out = tmp_path / "report.txt"
    done = subprocess.run(
        [str(SCRIPT), "rng", "test", "--cards", "13520", "--fixed-seed", KEY]  # noqa: RUF005
        + ["--html", "/dev/full", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert (
        done.stderr.strip() == "thirteen rng test: cannot write /dev/full: No space left on device"
    )
    assert done.stdout.startswith("thirteen RNG report"), done.stdout[:200]
    assert out.read_text(encoding="utf-8") == done.stdout
    done = subprocess.run(
        [str(SCRIPT), "rng", "test", "--cards", "13520", "--fixed-seed", KEY]  # noqa: RUF005
        + ["--out", "/dev/full", "--html", str(tmp_path / "page.html")],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 2 and done.stdout.startswith("thirteen RNG report"), done.stderr
    assert (tmp_path / "page.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
