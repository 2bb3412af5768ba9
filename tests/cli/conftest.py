"""Run the real ``thirteen`` console script of this environment."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SCRIPT = shutil.which("thirteen", path=str(Path(sys.executable).parent))


@dataclass
class Run:
    status: int
    lines: list[dict[str, Any]]
    stdout: str
    stderr: str


def run(args: Sequence[str], stdin: str = "") -> Run:
    if SCRIPT is None:
        pytest.fail("the thirteen console script is not installed: run make setup")
    done = subprocess.run(
        [SCRIPT, *args], input=stdin, capture_output=True, text=True, timeout=120, check=False
    )
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return Run(done.returncode, lines, done.stdout, done.stderr)


def jsonl(*rows: Any) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
