"""Fixtures: a real server on an ephemeral port, on each store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.clock import ManualClock
from tests.support.server import ServerThread
from tests.support.stores import store_environ


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    with store_environ(request.param, tmp_path) as environ:
        yield environ


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def server(store: dict[str, str], tmp_path: Path, clock: ManualClock) -> Iterator[ServerThread]:
    running = ServerThread(tmp_path / "data", store, clock)
    yield running
    running.stop()


@pytest.fixture
def start_server(
    store: dict[str, str], tmp_path: Path, clock: ManualClock
) -> Iterator[Callable[[], ServerThread]]:
    """Start a server on this test's store; call again after ``stop()`` to restart it on the
    same data. Every server still running at the end is stopped."""
    started: list[ServerThread] = []

    def start() -> ServerThread:
        running = ServerThread(tmp_path / "data", store, clock)
        started.append(running)
        return running

    yield start
    for running in started:
        if running.thread.is_alive():
            running.stop()


@pytest.fixture
def caplog_json() -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """What the server logged (structlog events as dicts) while the test ran."""
    import structlog.testing

    with structlog.testing.capture_logs() as captured:
        yield lambda: [dict(event) for event in captured]
