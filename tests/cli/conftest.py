"""Run the real ``thirteen`` console script of this environment."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tests.support.cli import thirteen


@dataclass
class Run:
    status: int
    lines: list[dict[str, Any]]
    stdout: str
    stderr: str


def run(args: Sequence[str], stdin: str = "") -> Run:
    """``thirteen ARGS`` with ``stdin``, its standard output read as JSON Lines."""
    done = thirteen(*args, stdin=stdin)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    return Run(done.returncode, lines, done.stdout, done.stderr)


def jsonl(*rows: Any) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)
