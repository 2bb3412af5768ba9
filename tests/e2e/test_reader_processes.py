"""The reader processes of the listings of rounds (issue 22, ``service.rpc.reader``), against
real ``thirteen serve`` processes on both stores: the pages they encode are byte for byte the
pages the serving process makes itself (``THIRTEEN_READERS=0``), a reader runs at a lower
priority, a reader killed with SIGKILL between or during calls costs at most the call in flight
(``UNAVAILABLE``, never ``INTERNAL``), reads still hold every round revealed before the call,
and the server stops without waiting for a reader."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc

from service._generated.thirteen.v1 import results_pb2, table_pb2
from service.opening import open_app
from tests.e2e.helpers import (
    arrange_well,
    deal,
    reveal,
    showdowns,
    unarranged_rounds,
    wait_until,
)
from tests.support.clock import ManualClock
from tests.support.serve_process import SCRIPT, ServeProcess

PLAYERS = ["ann", "bo", "cy"]
ROUNDS_WRITTEN = 240  # by the application itself, quicker than over gRPC
LISTINGS: list[tuple[str, Any, dict[str, str]]] = [
    ("/thirteen.v1.TableService/ListRounds", table_pb2.ListRoundsRequest, {"table_id": "t"}),
    (
        "/thirteen.v1.ResultsService/ListRoundResults",
        results_pb2.ListRoundResultsRequest,
        {"table_id": "t"},
    ),
    (
        "/thirteen.v1.ResultsService/ListPlayerRounds",
        results_pb2.ListPlayerRoundsRequest,
        {"player_id": "ann"},
    ),
]


def _written(data: Path, environ: dict[str, str]) -> None:
    """``ROUNDS_WRITTEN`` rounds at table ``t``, each revealed past its deadline (R10.3)."""
    clock = ManualClock()
    app = open_app(data, clock=clock, environ=environ)
    try:
        unarranged_rounds(app, clock, PLAYERS, ROUNDS_WRITTEN)
    finally:
        app.close()


def _served(data: Path, environ: dict[str, str], readers: int | None = None) -> ServeProcess:
    more = {} if readers is None else {"THIRTEEN_READERS": str(readers)}
    return ServeProcess(data, environ={**environ, **more})


def _raw(server: ServeProcess, path: str, request: Any) -> bytes | tuple[str, str]:
    """The encoded answer of a listing as it came over the wire, or its status and details."""
    call: Any = server.channel.unary_unary(
        path, request_serializer=type(request).SerializeToString, response_deserializer=None
    )
    try:
        answer: bytes = call(request, timeout=30)
        return answer
    except grpc.RpcError as error:
        return error.code().name, error.details() or ""


def _pages(server: ServeProcess) -> list[bytes | tuple[str, str]]:
    """Every page of every listing at several sizes, following the tokens, and a few refusals."""
    found: list[bytes | tuple[str, str]] = []
    for path, request_type, subject in LISTINGS:
        for size in (0, 100, 7, 1000):
            token = ""
            while True:
                answer = _raw(
                    server, path, request_type(**subject, page_size=size, page_token=token)
                )
                found.append(answer)
                assert isinstance(answer, bytes), answer
                token = request_type_response(path).FromString(answer).next_page_token
                if not token:
                    break
        unknown = {key: "nobody" for key in subject}
        found.append(_raw(server, path, request_type(**unknown)))
        found.append(_raw(server, path, request_type(**subject, page_token="bm90IG91cnM")))
    return found


def request_type_response(path: str) -> Any:
    name = path.rsplit("/", 1)[1]
    module = table_pb2 if name == "ListRounds" else results_pb2
    return getattr(module, f"{name}Response")


def _readers(pid: int) -> list[int]:
    """The reader processes of the serving process ``pid`` (spawned by multiprocessing)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            command = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid and fields[0] != "Z" and b"spawn_main" in command:
            found.append(int(entry.name))
    return found


def test_pages_from_a_reader_are_byte_for_byte_the_servers_own(
    store: dict[str, str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    _written(data, store)
    first = _served(data, store)  # the default: one reader process
    try:
        showdowns(first, "t", 12)  # arranged well: results with points and coins
        with_reader = _pages(first)
        assert _readers(first.process.pid), "no reader process answered the listings"
    finally:
        first.stop()
    second = _served(data, store, readers=0)
    try:
        assert not _readers(second.process.pid)
        without = _pages(second)
    finally:
        second.stop()
    assert len(with_reader) > 60
    assert with_reader == without
    assert any(isinstance(a, tuple) and a[0] == "NOT_FOUND" for a in without)
    assert any(isinstance(a, tuple) and a[0] == "INVALID_ARGUMENT" for a in without)


def _listed(server: ServeProcess) -> list[str]:
    ids: list[str] = []
    token = ""
    while True:
        page = server.tables.ListRounds(
            table_pb2.ListRoundsRequest(table_id="t", page_size=100, page_token=token), timeout=30
        )
        ids += [r.round_id for r in page.rounds]
        token = page.next_page_token
        if not token:
            return ids


def _killed(server: ServeProcess) -> int:
    """SIGKILL to the (first) reader process; its pid."""
    pids = wait_until(lambda: _readers(server.process.pid), "a reader process")
    os.kill(pids[0], signal.SIGKILL)
    return pids[0]


def test_a_reader_runs_lower_is_replaced_when_killed_and_never_holds_up_a_stop(
    store: dict[str, str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    _written(data, store)
    server = _served(data, store)
    try:
        listed = _listed(server)
        assert len(listed) == ROUNDS_WRITTEN
        reader = wait_until(lambda: _readers(server.process.pid), "a reader process")[0]
        assert os.getpriority(os.PRIO_PROCESS, reader) > os.getpriority(
            os.PRIO_PROCESS, server.process.pid
        )
        # Between calls: the next call is answered in full, by a new reader.
        gone = _killed(server)
        assert _listed(server) == listed
        assert gone not in _readers(server.process.pid)
        # Read your writes: a round revealed is listed by the next call, at once.
        for _ in range(3):
            dealt = deal(server, "t")
            arrange_well(server, dealt)
            reveal(server, dealt.round_id)
            listed.append(dealt.round_id)
            assert _listed(server) == listed
            recall = server.channel.unary_unary(
                "/thirteen.v1.ResultsService/ListPlayerRounds",
                request_serializer=results_pb2.ListPlayerRoundsRequest.SerializeToString,
                response_deserializer=results_pb2.ListPlayerRoundsResponse.FromString,
            )(results_pb2.ListPlayerRoundsRequest(player_id="ann", page_size=1), timeout=30)
            assert [r.round_id for r in recall.rounds] == [dealt.round_id]
        # During calls: a call in flight is answered in full or UNAVAILABLE, never INTERNAL.
        codes = _while_killing(server, lambda: _listed(server) == listed)
        assert set(codes) <= {"OK", "UNAVAILABLE"}, codes
        assert _listed(server) == listed
    finally:
        pids = _readers(server.process.pid)
        server.channel.close()
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=30) == 0
    assert "Traceback" not in "".join(server.lines)
    wait_until(lambda: not any(Path(f"/proc/{p}").exists() for p in pids), "the readers to end")


def _while_killing(server: ServeProcess, call: Callable[[], bool]) -> list[str]:
    """The codes of ``call`` in a loop while a reader is killed twice under it."""
    codes: list[str] = []
    done = threading.Event()

    def loop() -> None:
        while not done.is_set():
            try:
                assert call()
                codes.append("OK")
            except grpc.RpcError as error:
                codes.append(error.code().name)

    caller = threading.Thread(target=loop)
    caller.start()
    try:
        for _ in range(2):
            time.sleep(0.3)
            _killed(server)
        time.sleep(0.5)
    finally:
        done.set()
        caller.join(60)
    return codes


def test_serve_refuses_a_number_of_readers_it_cannot_start_with_one_line(tmp_path: Path) -> None:
    for value, said in (("many", "must be a number"), ("17", "must be from 0 to 16")):
        done = subprocess.run(
            [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(tmp_path)],
            capture_output=True,
            text=True,
            timeout=60,
            env={**os.environ, "THIRTEEN_STORE": "sqlite", "THIRTEEN_READERS": value},
        )
        assert done.returncode == 2, done.stderr
        assert f"THIRTEEN_READERS {said}" in done.stderr
        assert "Traceback" not in done.stderr
