"""The reader processes (issue 22): the pages of the listings of rounds read from the views and
encoded in processes of their own, at a lower priority than the serving process, so that a
caller listing in a loop costs the serving process's interpreter (its event loop, the writer)
only the hand-over, not the reading and the mapping.

A small pool (``THIRTEEN_READERS`` processes, default 1; 0 reads in the serving process, as
before) started with the ``spawn`` method, each opening its own connection to the views from
the server's settings (``ViewStore.settings``: the SQLite file or the PostgreSQL schema). A
reader that dies (killed, out of memory) is replaced by a new pool, and the read is asked once
more of it: a read has no effect, so asking it twice is safe; a second loss is ``UNAVAILABLE``,
to retry."""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from projections.store import ViewStore
from service.errors import Unavailable
from service.rpc.listings import Answer, encoded

READERS = "THIRTEEN_READERS"
"""The environment variable of the number of reader processes (0: none, read in the server)."""
DEFAULT_READERS = 1
NICENESS = 10
"""How much lower a reader's priority is than the serving process's (``os.nice``): with the
cores busy, the operating system runs the game's calls first and the pages in what is left."""
ASKED = 2
"""Times a read is asked of a pool before ``UNAVAILABLE``: once, and once of a new pool after
the first lost its process."""

_store: ViewStore | None = None  # a reader process's views (``_opened``)


def readers(environ: Mapping[str, str]) -> int:
    """The number of reader processes ``environ`` asks for (``READERS``)."""
    value = environ.get(READERS, "").strip()
    if not value:
        return DEFAULT_READERS
    try:
        count = int(value)
    except ValueError:
        raise ValueError(f"{READERS} must be a number (0: none), got {value!r}") from None
    if not 0 <= count <= 16:
        raise ValueError(f"{READERS} must be from 0 to 16, got {count}")
    return count


def _opened(settings: dict[str, Any]) -> None:
    """A reader process's start: a lower priority, Ctrl-C left to the server (which stops the
    pool), and its own connection to the views."""
    global _store
    os.nice(NICENESS)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _store = ViewStore(**settings)


def _page(kind: str, subject: str, after: int, size: int, upto: int | None) -> Answer:
    assert _store is not None, "a reader process opens its views first (_opened)"
    return encoded(_store, kind, subject, after, size, upto)


class Reader:
    """A pool of ``processes`` reader processes reading the views ``store`` reads."""

    def __init__(self, store: ViewStore, processes: int) -> None:
        self.settings = store.settings()
        self.processes = processes
        self._lock = threading.Lock()
        self._pool = self._started()

    def _started(self) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(
            self.processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_opened,
            initargs=(self.settings,),
        )

    def page(self, kind: str, subject: str, after: int, size: int, upto: int | None) -> Answer:
        """A page of the listing ``kind`` read in a reader process (``listings.encoded``);
        blocks the calling thread, which holds the interpreter only to hand it over."""
        for _ in range(ASKED):
            pool = self._pool
            try:
                return pool.submit(_page, kind, subject, after, size, upto).result()
            except BrokenProcessPool:  # its process died: a new pool, and the read once more
                self._replace(pool)
        raise Unavailable("the reader process stopped during the read; retry the call")

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._pool is broken:
                self._pool = self._started()
        broken.shutdown(wait=False, cancel_futures=True)

    def pids(self) -> list[int]:
        """The reader processes' ids (those started so far)."""
        return [p.pid for p in list(getattr(self._pool, "_processes", {}).values()) if p.pid]

    def close(self) -> None:
        """Stop the readers: a read still running (its caller gone) ends first, in
        milliseconds; a reader that hangs is killed."""
        pool = self._pool
        processes = list(getattr(pool, "_processes", {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.join(5.0)
            if process.is_alive():
                process.kill()


def reader(environ: Mapping[str, str], store: ViewStore) -> Reader | None:
    """The reader processes ``environ`` asks for, reading ``store``'s views; None: none."""
    count = readers(environ)
    return Reader(store, count) if count else None
