"""An export's log section (``service.evidence``): where the document's events are in the
transparency log, proven against a signed checkpoint that covers them."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

from domain.tlog.evidence import LogEvidence
from service.application import Thirteen
from service.errors import Unavailable
from service.evidence import Evidence
from service.transparency.log import TransparencyLog

Run = Callable[..., Awaitable[Any]]
EXPORT_WAIT = 10.0
"""Seconds an export waits, beyond the ``checkpoint_interval`` (a checkpoint is signed that
often while the log grows), for a checkpoint covering its events; then it is UNAVAILABLE, to be
retried."""


def located(app: Thirteen, evidence: Evidence) -> list[tuple[str, int, int]]:
    """(stream, version, position) of each of the document's events still in the store."""
    records = evidence.records()
    positions = app.database.positions([(UUID(r.stream), r.version) for r in records])
    found = [(r.stream, r.version, positions.get((UUID(r.stream), r.version))) for r in records]
    return [(stream, version, at) for stream, version, at in found if at is not None]


async def logged(
    log: TransparencyLog, app: Thirteen, evidence: Evidence, earlier_size: int, run: Run
) -> LogEvidence:
    """The log section of ``evidence``: once a checkpoint covers every event (waiting at most
    the checkpoint interval and ``EXPORT_WAIT``), the newest covering one that witnesses have
    cosigned, else the latest (``TransparencyLog.covering_position``), with each event's
    inclusion proof in it and the consistency proof from ``earlier_size`` (a size the caller
    holds a checkpoint of)."""
    events: list[tuple[str, int, int]] = await run(located, app, evidence)
    if earlier_size:
        await run(log.tree_size, earlier_size)  # NOT_YET_LOGGED for a size it never signed
    newest = max((position for _, _, position in events), default=0)
    waited = log.checkpoint_interval + EXPORT_WAIT
    deadline = time.monotonic() + waited
    while True:
        checkpoint = await run(log.covering_position, newest, earlier_size)
        if checkpoint is not None:
            break
        if time.monotonic() >= deadline:
            raise Unavailable(
                f"the transparency log has not signed a checkpoint covering this round within "
                f"{waited:.0f} s (it signs one every {log.checkpoint_interval:g} s while "
                "the log grows): retry the export"
            )
        log.poke()
        await asyncio.sleep(0.05)
    proven: LogEvidence = await run(log.evidence, events, checkpoint, earlier_size)
    return proven
