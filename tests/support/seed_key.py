"""A seed key file for a test's ``thirteen serve`` processes: ``serve`` creates one only for the
embedded default (SQLite, ``<data>/seed.key``); replicas and explicit paths need it to exist."""

from __future__ import annotations

import contextlib
from pathlib import Path

from service.seed_keys import create


def ensure_seed_key(path: Path) -> Path:
    """``path``, created with a new key unless it exists."""
    if not path.exists():
        with contextlib.suppress(FileExistsError):
            create(path)
    return path
