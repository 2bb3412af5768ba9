"""A progress bar on a stderr that cannot be written (a full disk, closed) stops showing; the
command goes on and answers as ever (the RNG kit's progress was fixed by issue 24's attack; the
audit's and the views' rebuild's bar is the older one of the same kind)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.cli import SCRIPT

V1_STORE = Path(__file__).parents[1] / "fixtures" / "v1_store"


@pytest.mark.parametrize("stderr", ["full", "closed"])
def test_the_audit_of_a_store_answers_whatever_becomes_of_its_progress_bar(
    tmp_path: Path, stderr: str
) -> None:
    data = tmp_path / "data"
    shutil.copytree(V1_STORE, data)
    command = [str(SCRIPT), "audit", "--all", "--data", str(data)]
    environ = {**os.environ, "THIRTEEN_STORE": "sqlite"}
    if stderr == "full":
        with open("/dev/full", "w") as full:
            done = subprocess.run(
                command, stdout=subprocess.PIPE, stderr=full, text=True, env=environ, timeout=120
            )
    else:
        done = subprocess.run(
            ["sh", "-c", '"$@" 2>&-', "sh", *command],
            stdout=subprocess.PIPE,
            text=True,
            env=environ,
            timeout=120,
        )
    assert done.returncode == 0, done.stdout[-2000:]
    assert done.stdout.rstrip().endswith("checks: all passed"), done.stdout[-2000:]
