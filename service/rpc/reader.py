"""The reader processes (issue 22): the pages of the listings of rounds read from the views and
encoded in processes of their own, at a lower priority than the serving process, so that a
caller listing in a loop costs the serving process's interpreter (its event loop, the writer)
only the hand-over, not the reading and the mapping.

A small pool (``THIRTEEN_READERS`` processes, default 1; 0 reads in the serving process, as
before), each started with the ``spawn`` method when a page first needs it and opening its own
connection to the views from the server's settings (``ViewStore.settings``: the SQLite file or
the PostgreSQL schema). Each has a pipe of its own, whose other end only it holds: a reader
that dies (killed, out of memory), even halfway through an answer, is seen at once as the end
of its pipe (``concurrent.futures.ProcessPoolExecutor`` shares one pipe among its processes and
can wait forever for the rest of an answer cut off). The read is then asked once more, of a
new reader: a read has no effect, so asking it twice is safe; a second loss is
``UNAVAILABLE``, to retry. A reader that does not answer within ``READ_SECONDS`` (stopped,
frozen) is killed and the read ``UNAVAILABLE``: it would hold the heavy reads' turn for good."""

from __future__ import annotations

import multiprocessing
import os
import re
import signal
import threading
import traceback
from collections.abc import Mapping
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
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
"""Times a read is asked before ``UNAVAILABLE``: once, and once of a new reader after the first
died under it."""
STOP_SECONDS = 5.0
"""How long a stopping server waits for a reader to end its read before killing it."""
READ_SECONDS = 10.0
"""How long a page may take in a reader (milliseconds, as a rule) before the reader is taken for
stuck (stopped, frozen, waiting on a lock): killed, and the read ``UNAVAILABLE``. Its turn of
the heavy reads (``Runner.heavy``) is then free: a reader that never answers held it for good,
every listing of the server waiting behind it past its deadline."""


def readers(environ: Mapping[str, str]) -> int:
    """The number of reader processes ``environ`` asks for (``READERS``)."""
    value = environ.get(READERS, "").strip()
    if not value:
        return DEFAULT_READERS
    if not re.fullmatch(r"-?[0-9]+", value):  # not int()'s "1_0" (10) nor "\u0663" (3)
        raise ValueError(f"{READERS} must be a number (0: none), got {value!r}")
    count = int(value)
    if not 0 <= count <= 16:
        raise ValueError(f"{READERS} must be from 0 to 16, got {count}")
    return count


def _serve(conn: Connection, settings: dict[str, Any]) -> None:
    """A reader process: a lower priority, Ctrl-C left to the server (which stops it), its own
    connection to the views; then a page (``listings.encoded``) for each request, until the
    server closes the pipe. What no page should raise comes back as ``("failed", traceback)``.
    A server gone (killed) while a page was read leaves nobody to answer: the reader ends,
    quietly (its traceback would land in the server's log stream, which it shares)."""
    os.nice(NICENESS)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    store = ViewStore(**settings)
    try:
        while True:
            try:
                asked = conn.recv()
            except (EOFError, OSError):  # closed by the server, or reset by its death
                return
            try:
                answer: Answer = encoded(store, *asked)
            except Exception:
                answer = ("failed", traceback.format_exc())
            try:
                conn.send(answer)
            except OSError:  # BrokenPipeError: the server's end is closed, the server gone
                return
    finally:
        store.close()


class Stuck(Exception):
    """A reader has not answered in time (``READ_SECONDS``)."""


class _Process:
    """One reader process and the server's end of its pipe."""

    def __init__(self, settings: dict[str, Any]) -> None:
        context = multiprocessing.get_context("spawn")
        self.conn, theirs = context.Pipe()
        try:
            self.process: BaseProcess = context.Process(
                target=_serve, args=(theirs, settings), name="thirteen-reader", daemon=True
            )
            self.process.start()
        except BaseException:  # out of file descriptors or processes: nothing left open
            self.conn.close()
            raise
        finally:
            theirs.close()  # only the reader holds it now: its end is the end of the pipe

    def ask(self, asked: tuple[Any, ...], wait: float) -> Answer:
        """Its answer; ``EOFError`` or ``OSError`` once the process is gone, ``Stuck`` when it
        has not answered within ``wait`` seconds."""
        self.conn.send(asked)
        if not self.conn.poll(wait):  # a process gone is readable at once: its end of file
            raise Stuck
        answer: Answer = self.conn.recv()
        return answer

    def end(self, wait: float) -> None:
        """The pipe closed (the reader ends when it sees it), and the process killed if it has
        not ended within ``wait`` seconds."""
        self.conn.close()
        self.process.join(wait)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(wait)


class Reader:
    """Up to ``processes`` reader processes reading the views ``store`` reads."""

    def __init__(self, store: ViewStore, processes: int) -> None:
        self.settings = store.settings()
        self.processes = processes
        self._slots = threading.BoundedSemaphore(processes)
        self._lock = threading.Lock()
        self._idle: list[_Process] = []
        self._all: set[_Process] = set()
        self._closed = False

    def page(self, kind: str, subject: str, after: int, size: int, upto: int | None) -> Answer:
        """A page of the listing ``kind`` read in a reader process (``listings.encoded``);
        blocks the calling thread, which holds the interpreter only to hand it over."""
        asked = (kind, subject, after, size, upto)
        with self._slots:
            for _ in range(ASKED):
                reader = self._taken()
                try:
                    answer = reader.ask(asked, READ_SECONDS)
                except Stuck:  # not asked again: the read itself may be what holds it up
                    self._lost(reader)
                    raise Unavailable(
                        f"the reader process did not answer within {READ_SECONDS:g} s; "
                        "retry the call"
                    ) from None
                except (EOFError, OSError):  # it died: a new one, and the read once more
                    self._lost(reader)
                    continue
                self._given_back(reader)
                if answer[0] == "failed":
                    raise RuntimeError(f"a reader process failed:\n{answer[1]}")
                return answer
        raise Unavailable("the reader process stopped during the read; retry the call")

    def _taken(self) -> _Process:
        with self._lock:
            if self._closed:
                raise Unavailable("the server is stopping")
            if self._idle:
                return self._idle.pop()
            try:
                reader = _Process(self.settings)
            except OSError as error:  # EMFILE, EAGAIN, ENOMEM: the server's limits, for now
                raise Unavailable(
                    f"no reader process could be started ({error.strerror or error}); "
                    "retry the call"
                ) from None
            self._all.add(reader)
            return reader

    def _given_back(self, reader: _Process) -> None:
        with self._lock:
            if not self._closed:
                self._idle.append(reader)
                return
        reader.end(STOP_SECONDS)

    def _lost(self, reader: _Process) -> None:
        with self._lock:
            self._all.discard(reader)
        reader.end(0.5)

    def pids(self) -> list[int]:
        """The reader processes' ids (those started so far and not lost)."""
        with self._lock:
            return [r.process.pid for r in self._all if r.process.pid]

    def close(self) -> None:
        """Stop the readers, once the server's calls have had their grace: an idle one ends
        when its pipe closes (killed if it has not within ``STOP_SECONDS``); one still reading
        is killed at once, for a call already given up (a stopped or stuck reader would hold
        its thread, and the server's stop, up to ``READ_SECONDS``): that thread sees its pipe
        end and lets it go. Reads asked after are ``UNAVAILABLE``."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
            busy = [reader for reader in self._all if reader not in idle]
        for reader in busy:
            reader.process.kill()
        for reader in idle:
            reader.end(STOP_SECONDS)


def reader(environ: Mapping[str, str], store: ViewStore) -> Reader | None:
    """The reader processes ``environ`` asks for, reading ``store``'s views; None: none."""
    count = readers(environ)
    return Reader(store, count) if count else None
