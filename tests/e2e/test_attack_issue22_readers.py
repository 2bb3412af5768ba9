"""Attacks from outside on the reader processes of the listings of rounds (issue 22,
``service.rpc.reader``): real ``thirteen serve`` processes killed, flooded and misconfigured,
each finding one test that failed on the code as found."""

from __future__ import annotations

import functools
import os
import resource
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import grpc

from service.rpc.reader import READ_SECONDS
from tests.e2e.helpers import wait_until
from tests.e2e.test_reader_processes import LISTINGS, _listed, _raw, _readers, _served, _written
from tests.support.serve_process import SCRIPT, ServeProcess

SQLITE = {"THIRTEEN_STORE": "sqlite"}


def _listing_in_a_loop(server: ServeProcess, callers: int) -> tuple[threading.Event, list[str]]:
    """``callers`` threads asking for full pages of the three listings until the event is set;
    the codes they got."""
    done = threading.Event()
    codes: list[str] = []

    def loop(i: int) -> None:
        path, request_type, subject = LISTINGS[i % len(LISTINGS)]
        while not done.is_set():
            answer = _raw(server, path, request_type(**subject, page_size=100))
            codes.append("OK" if isinstance(answer, bytes) else answer[0])

    for i in range(callers):
        threading.Thread(target=loop, args=(i,), daemon=True).start()
    return done, codes


def _pages_ok(codes: list[str]) -> bool:
    return codes.count("OK") >= 10


def _gone(pids: list[int]) -> bool:
    """Whether none of ``pids`` runs any more (a zombie of a dead parent is reaped by init)."""
    for pid in pids:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            return False
    return True


def test_the_serving_process_killed_mid_read_leaves_no_reader_and_no_traceback(
    tmp_path: Path,
) -> None:
    """SIGKILL to the serving process while its reader encodes pages for callers: the reader
    answers into a pipe nobody holds any more. It must end at once, quietly (it wrote a
    ``BrokenPipeError`` traceback into the server's log stream, which it shares), hold nothing
    that stops a restart on the same data (SQLite's one serving process), and the restarted
    server lists every round."""
    data = tmp_path / "data"
    _written(data, SQLITE)
    for attempt in range(3):  # the reader is busy nearly all the time: one kill lands mid-read
        server = _served(data, SQLITE)
        done, codes = _listing_in_a_loop(server, 6)
        try:
            wait_until(functools.partial(_pages_ok, codes), "pages from the reader", 60)
            readers = _readers(server.process.pid)
            assert readers, "no reader process"
            server.process.send_signal(signal.SIGKILL)
            server.process.wait(timeout=30)
        finally:
            done.set()
        started = time.monotonic()
        wait_until(functools.partial(_gone, readers), "the orphaned readers to end", 5)
        assert time.monotonic() - started < 5
        time.sleep(0.3)  # what they wrote last reaches the test's reading thread
        said = "".join(server.lines)
        assert "Traceback" not in said, (attempt, said[-3000:])
        assert "BrokenPipeError" not in said
    restarted = _served(data, SQLITE)
    try:
        assert len(_listed(restarted)) == 240
    finally:
        restarted.stop()
    assert restarted.process.returncode == 0


def test_serve_refuses_a_number_of_readers_python_alone_would_read(tmp_path: Path) -> None:
    """``int()`` reads ``1_0`` as 10 and ``٣`` (Arabic-Indic three) as 3: a typo or a
    look-alike in ``THIRTEEN_READERS`` started that many readers silently. Only ASCII digits
    (and the spaces around them) are a number of readers; the rest is one line, status 2."""
    for value in ("1_0", "\u0663", "-1", "17", "x", "1e3", "0x1"):
        done = subprocess.run(
            [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=30,  # a server that starts runs until killed: a failure
            env={**os.environ, **SQLITE, "THIRTEEN_READERS": value},
        )
        assert done.returncode == 2, (value, done.stderr[-2000:])
        [line] = [line for line in done.stderr.splitlines() if not line.startswith("{")]
        assert line.startswith("thirteen serve: THIRTEEN_READERS must be"), line
        assert "Traceback" not in done.stderr


def test_a_reader_that_stops_answering_does_not_hold_the_listings_for_good(
    tmp_path: Path,
) -> None:
    """A reader stopped (SIGSTOP: a debugger, a frozen cgroup; or a read waiting on a lock)
    never answers: the thread waiting for it held the one turn of the heavy reads for good, and
    every listing of the server, whatever its deadline, waited behind it until it passed. The
    read is given up after ``READ_SECONDS`` (UNAVAILABLE, with details), the reader killed, and
    the next listing answered at once by a new one."""
    data = tmp_path / "data"
    _written(data, SQLITE)
    server = _served(data, SQLITE)
    try:
        listed = _listed(server)
        [stopped] = wait_until(lambda: _readers(server.process.pid), "a reader process")
        os.kill(stopped, signal.SIGSTOP)
        path, request_type, subject = LISTINGS[0]
        started = time.monotonic()
        call: Any = server.channel.unary_unary(
            path, request_serializer=request_type.SerializeToString
        )
        try:
            call(request_type(**subject, page_size=5), timeout=20)
            raise AssertionError("a stopped reader answered")
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.UNAVAILABLE, error
            assert "did not answer" in (error.details() or "")
        assert time.monotonic() - started < READ_SECONDS + 5
        started = time.monotonic()
        assert _listed(server) == listed
        assert time.monotonic() - started < 5
        wait_until(functools.partial(_gone, [stopped]), "the stuck reader to be killed", 5)
    finally:
        server.stop()
    assert server.process.returncode == 0


def test_a_reader_that_cannot_be_started_is_unavailable_not_internal(tmp_path: Path) -> None:
    """The serving process at its limit of open files (many connections, a low ``ulimit -n``)
    when its reader must be replaced: starting one (its pipes) failed with ``EMFILE`` and the
    listing answered INTERNAL, where the server reading pages itself answered them. It is
    UNAVAILABLE now, with details, and the first page once files are free again starts one."""
    data = tmp_path / "data"
    _written(data, SQLITE)
    server = _served(data, SQLITE)
    pid = server.process.pid
    path, request_type, subject = LISTINGS[0]
    try:
        listed = _listed(server)
        [killed] = wait_until(lambda: _readers(pid), "a reader process")
        os.kill(killed, signal.SIGKILL)
        wait_until(functools.partial(_gone, [killed]), "the reader to die", 5)
        soft, hard = resource.prlimit(pid, resource.RLIMIT_NOFILE)
        resource.prlimit(pid, resource.RLIMIT_NOFILE, (len(os.listdir(f"/proc/{pid}/fd")), hard))
        try:
            answers = [_raw(server, path, request_type(**subject, page_size=5)) for _ in range(3)]
        finally:
            resource.prlimit(pid, resource.RLIMIT_NOFILE, (soft, hard))
        refused = [a for a in answers if not isinstance(a, bytes)]
        assert refused, "a reader started with no file descriptor left"
        for code, details in refused:
            assert code == "UNAVAILABLE", (code, details)
            assert "no reader process could be started" in details
        assert _listed(server) == listed
        assert _readers(pid)
    finally:
        server.stop()
    assert server.process.returncode == 0


def test_sigterm_with_a_read_in_a_stuck_reader_stops_within_the_grace(tmp_path: Path) -> None:
    """SIGTERM while a page is read by a reader that does not answer (stopped): the server
    stopped its readers only after its pool's threads were done, and the thread waiting for
    that reader never was: the server never exited (after ``READ_SECONDS`` since it gives
    up, still twice its grace of 5 s). The readers are stopped right after the grace now, a
    reader still reading killed: exit 0 within the grace and a little more, no reader left."""
    data = tmp_path / "data"
    _written(data, SQLITE)
    server = _served(data, SQLITE)
    path, request_type, subject = LISTINGS[0]
    stopped = 0
    try:
        _listed(server)
        [stopped] = wait_until(lambda: _readers(server.process.pid), "a reader process")
        os.kill(stopped, signal.SIGSTOP)
        answers: list[bytes | tuple[str, str]] = []
        caller = threading.Thread(
            target=lambda: answers.append(
                _raw(server, path, request_type(**subject, page_size=100))
            )
        )
        caller.start()
        time.sleep(1)  # its read is in the stopped reader now
        started = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=30) == 0
        assert time.monotonic() - started < 5 + 2.5
        caller.join(10)
        assert answers and not isinstance(answers[0], bytes)
        wait_until(functools.partial(_gone, [stopped]), "the stuck reader to be killed", 5)
    finally:
        if server.process.poll() is None:
            server.kill()
        if stopped and not _gone([stopped]):
            os.kill(stopped, signal.SIGKILL)


def test_two_readers_read_two_pages_at_once(tmp_path: Path) -> None:
    """``THIRTEEN_READERS=2`` started one reader however many pages were asked at once: a page
    took the one turn of the heavy reads, so the second reader never had one. Pages read in
    readers now take turns as many at once as there are readers: with one reader stopped
    under a page, the next page is read by a second reader before the first gives up."""
    data = tmp_path / "data"
    _written(data, SQLITE)
    server = _served(data, SQLITE, readers=2)
    path, request_type, subject = LISTINGS[0]
    stopped = 0
    try:
        listed = _listed(server)
        [stopped] = wait_until(lambda: _readers(server.process.pid), "a reader process")
        os.kill(stopped, signal.SIGSTOP)
        order: list[str] = []
        stuck = threading.Thread(
            target=lambda: order.append(
                "stuck"
                if not isinstance(_raw(server, path, request_type(**subject)), bytes)
                else "stuck answered"
            )
        )
        stuck.start()
        time.sleep(1)  # its page is in the stopped reader now
        assert _listed(server) == listed  # read by a second reader meanwhile
        order.append("listed")
        stuck.join(READ_SECONDS + 30)
        assert order == ["listed", "stuck"], order
        assert len(_readers(server.process.pid)) >= 1
    finally:
        server.stop()
        if stopped and not _gone([stopped]):
            os.kill(stopped, signal.SIGKILL)
