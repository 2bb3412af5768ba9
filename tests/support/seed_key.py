"""The key files of a test's ``thirteen serve`` processes: ``serve`` creates a seed key only for
the embedded default (SQLite, ``<data>/seed.key``), and a log key only for a new SQLite log;
replicas and explicit paths need them to exist."""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from service.seed_keys import create
from service.transparency.keys import LOG_KEY_FILE, load_or_create


def ensure_seed_key(path: Path) -> Path:
    """``path``, created with a new key unless it exists."""
    if not path.exists():
        with contextlib.suppress(FileExistsError):
            create(path)
    return path


def ensure_log_key(data: Path, args: Sequence[str], environ: Mapping[str, str]) -> None:
    """On PostgreSQL, the log key file ``args`` name (``--log-key``, default
    ``<data>/log.key``), created with a new key unless it exists: ``serve`` and ``worker`` make
    one only for a new SQLite log (issue 23). Replicas given one path share one key."""
    if environ.get("THIRTEEN_STORE") != "postgres":
        return
    given = [args[i + 1] for i, word in enumerate(args[:-1]) if word == "--log-key"]
    path = Path(given[-1]) if given else data / LOG_KEY_FILE
    if not path.exists():
        with contextlib.suppress(FileExistsError):
            load_or_create(path)
