"""Queries read the library's cached aggregates, brought up to date from the store on each
read, while the writer commits (issue 10): a reader never sees an aggregate half updated by
another reader, and only a command saves."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from domain.ids import wallet_uuid
from service.application import Thirteen
from service.opening import open_app

READERS = 8
SECONDS = 3.0


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Thirteen]:
    opened = open_app(tmp_path, environ={"THIRTEEN_STORE": "sqlite"})
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def switch_often() -> Iterator[None]:
    """Threads switch every microsecond, so interleavings that are rare become likely."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def test_readers_never_copy_a_wallet_half_brought_up_to_date(
    app: Thirteen, switch_often: None
) -> None:
    """Each credit of 1 moves a wallet one version on, so every copy a reader gets must hold
    balance = version - 1. Copying outside the lock that fast-forwards the shared cached
    wallet gave torn copies (a balance of one version with the version of another)."""
    app.credit("p", 1, "t0")
    stop = threading.Event()
    torn: list[tuple[int, int]] = []
    errors: list[str] = []
    reads = [0] * READERS

    def credit() -> None:
        i = 1
        while not stop.is_set():
            app.credit("p", 1, f"t{i}")
            i += 1

    def read(k: int) -> None:
        while not stop.is_set():
            try:
                wallet = app.wallet("p")
            except Exception as error:
                errors.append(repr(error))
                continue
            reads[k] += 1
            if wallet.balance != wallet.version - 1:
                torn.append((wallet.version, wallet.balance))

    threads = [threading.Thread(target=credit)]
    threads += [threading.Thread(target=read, args=(k,)) for k in range(READERS)]
    for thread in threads:
        thread.start()
    time.sleep(SECONDS)
    stop.set()
    for thread in threads:
        thread.join()
    assert sum(reads) > 0
    assert torn == [] and errors == []


def test_only_a_command_saves(app: Thirteen) -> None:
    """A save outside a command could be answered without being stored (a lost race re-runs
    the command, which then finds no new events) and would hand the caller's object to the
    writer: it is refused, and nothing is stored."""
    app.credit("p", 5, "t0")
    wallet = app.wallet("p")
    wallet.credit("not-saved", 7)
    before = app.max_position()
    with pytest.raises(RuntimeError, match="save outside a command"):
        app.save(wallet)
    assert app.max_position() == before
    assert app.wallet("p").balance == 5
    assert app.repository.get(wallet_uuid("p")).balance == 5
