"""The application opened on the configured store (``open_app``): what a serving process
(``service.bootstrap``) and every tool that reads a store (``service.tools``) start from. It
imports nothing of the gRPC adapter, so a command that only reads a store starts quickly."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path

from service.application import Thirteen
from service.clock import Clock
from service.eventstore.storage import opened
from service.seed_keys import SEED_KEY_FILE, load_or_create


def open_app(
    data: Path,
    *,
    clock: Clock | None = None,
    environ: Mapping[str, str] | None = None,
    seed_key: Path | None = None,
) -> Thirteen:
    """The application on the configured store (``service.eventstore.storage``), with its event
    table protected. Its server seeds are derived from the keys in ``seed_key`` (default
    ``<data>/seed.key``), read (or created) when first needed, so that tools that only read the
    store never touch it."""
    keys = functools.partial(load_or_create, seed_key or data / SEED_KEY_FILE)

    def construct(env: dict[str, str]) -> Thirteen:
        app = Thirteen(env, clock=clock, seed_keys=keys)
        app.database.protect()
        return app

    return opened(data, environ, construct)
