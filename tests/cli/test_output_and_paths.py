"""Where the output goes wrong, never with a traceback: a full disk, a reader that stops
reading, a terminal that cannot show 十三水; an empty data directory; log lines kept off a
command's standard output (issue 23)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.support.cli import SCRIPT, thirteen

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "v1_store"
ROUND = "18f0e08b-7fc1-5dc5-9b21-10368d951124"  # a round of the v1 fixture store
ROUND_LINE = '{"players": [{"id": "a", "cards": "2s"}]}\n'


def test_a_full_disk_under_standard_output_is_one_line_and_status_1() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(SCRIPT), "rng", "collect", "--deals", "50"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=120,
        )
    assert done.returncode == 1
    assert done.stderr == "thirteen: cannot write the output: No space left on device\n"


def test_score_into_a_full_disk_says_so_without_a_traceback() -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(SCRIPT), "score"],
            input=ROUND_LINE,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
            timeout=120,
        )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.endswith("thirteen: cannot write the output: No space left on device\n")


def test_a_reader_that_stops_reading_ends_it_quietly_as_sigpipe_would() -> None:
    process = subprocess.Popen(
        [str(SCRIPT), "rng", "collect", "--raw", "2000000"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.read(10)
    process.stdout.close()  # as `| head -c 10` does
    stderr = process.stderr.read()
    assert process.wait(timeout=120) == 128 + 13
    assert stderr == b""


def test_a_terminal_that_cannot_show_the_suits_gets_escapes(tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(FIXTURE, data)
    done = subprocess.run(
        [str(SCRIPT), "explain", "--data", str(data), "--round", ROUND],
        capture_output=True,
        check=False,
        timeout=120,
        env={**os.environ, "THIRTEEN_STORE": "sqlite", "PYTHONIOENCODING": "ascii"},
    )
    assert done.returncode == 0, done.stderr.decode("ascii", "replace")
    assert b"Traceback" not in done.stderr
    assert b"\\u2666" in done.stdout  # ♦


def test_serve_refuses_an_empty_data_directory_and_writes_nothing_here(tmp_path: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", ""],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "THIRTEEN_STORE": "sqlite"},
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "must name a directory" in done.stderr
    assert list(tmp_path.iterdir()) == []


def test_seed_key_init_prints_one_line_and_no_log_on_stdout(tmp_path: Path) -> None:
    done = thirteen("seed-key", "init", tmp_path / "seed.key")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("\n") == 1 and done.stdout.startswith("wrote ")
    assert "seed_key_created" not in done.stdout + done.stderr
