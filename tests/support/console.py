"""The dispute console for tests: rounds played through the real API (a normal showdown, a
foul left at the deadline, a special hand, hostile ids), the real ``thirteen console`` process
in front of a server, read over HTTP with urllib, and a ``Gate`` between the two that holds the
console's calls until the test lets them through."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

import grpc

from domain.rules.cards import Card, parse_cards
from domain.rules.specials import SPLIT_PATTERNS, Special, qualifies
from service._generated.thirteen.v1 import table_pb2
from tests.e2e.helpers import (
    PHASE,
    arrange,
    arrange_well,
    client_seed_for,
    deal,
    foul_piles,
    good_piles,
    hands_of,
    reveal,
    seated_table,
    wait_for_phase,
)
from tests.support.server import ServerThread

SCRIPT = Path(sys.executable).parent / "thirteen"
HOSTILE_PLAYER = '<script>alert("p")</script>&\'x'
HOSTILE_TABLE = 'tbl/<b>"1"</b>?#'  # a slash, a query and a fragment mark, markup and quotes
PLAYER_SEEDS = {"ann": "ann-seed", HOSTILE_PLAYER: '<i>"seed"</i>'}
_CHEAP = [s for s in Special if s not in SPLIT_PATTERNS]  # quick to check on many deals


@dataclass
class Played:
    """What ``play`` did, and what the API answered."""

    table: str
    players: list[str]
    showdown: str  # round ids
    foul: str
    special: str
    foul_player: str
    special_player: str
    results: dict[str, table_pb2.GetRoundResponse] = field(default_factory=dict)


def _has_cheap_special(hands: tuple[tuple[Card, ...], ...]) -> bool:
    return any(qualifies(s, hands[0]) for s in _CHEAP)


def play(server: ServerThread) -> Played:
    """Three rounds at a table with a hostile id, one player with a hostile id: a showdown, a
    foul the sweeper reveals at the deadline (R4.3, R10.3), and a special hand (R5, R6.5)."""
    players = ["ann", HOSTILE_PLAYER, "bo", "cy"]
    table = HOSTILE_TABLE
    seated_table(server, table, dict.fromkeys(players, 5000))

    dealt = server.tables.Deal(  # with players' seeds (R12.8), one of them hostile too
        table_pb2.DealRequest(
            table_id=table,
            client_seed="console-1",
            request_id="r1",
            player_seeds=PLAYER_SEEDS,
        )
    )
    arrange_well(server, dealt)
    reveal(server, dealt.round_id)
    showdown = dealt.round_id

    dealt = deal(server, table, client_seed="console-2", request_id="r2")
    hands = hands_of(dealt)
    arrange(server, dealt.round_id, HOSTILE_PLAYER, foul_piles(hands[HOSTILE_PLAYER]))
    arrange_well(server, dealt, [p for p in players if p != HOSTILE_PLAYER])
    server.clock.advance(61)
    wait_for_phase(server, dealt.round_id, PHASE.ROUND_PHASE_REVEALED)
    foul = dealt.round_id

    seed = client_seed_for(server, table, "r3", 4, _has_cheap_special)
    dealt = deal(server, table, client_seed=seed, request_id="r3")
    hands = hands_of(dealt)
    assert any(qualifies(s, parse_cards(hands["ann"])) for s in _CHEAP)
    arrange(server, dealt.round_id, "ann", special="any")
    for other in players[1:]:
        arrange(server, dealt.round_id, other, good_piles(hands[other]))
    reveal(server, dealt.round_id)
    special = dealt.round_id

    played = Played(table, players, showdown, foul, special, HOSTILE_PLAYER, "ann")
    for round_id in (showdown, foul, special):
        played.results[round_id] = server.tables.GetRound(
            table_pb2.GetRoundRequest(round_id=round_id)
        )
    return played


def play_many(server: ServerThread, table: str, players: list[str], rounds: int) -> list[str]:
    """``rounds`` plain showdowns at a new table, for paging; their round ids in order."""
    seated_table(server, table, dict.fromkeys(players, 10**6))
    played = []
    for k in range(rounds):
        dealt = deal(server, table, client_seed=f"many-{k}", request_id=f"many-{k}")
        arrange_well(server, dealt)
        reveal(server, dealt.round_id)
        played.append(dealt.round_id)
    return played


@dataclass
class Page:
    status: int
    headers: Message
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # the test reads the 303 itself


_OPENER = urllib.request.build_opener(_NoRedirect)


class Console:
    """``thirteen console --listen 127.0.0.1:0 ARGS`` in a process of its own; ``get`` fetches
    a page. Its stderr is kept in ``log``."""

    def __init__(self, address: str, *args: str) -> None:
        self.process = subprocess.Popen(
            [str(SCRIPT), "console", "--address", address, "--listen", "127.0.0.1:0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.banner = ""
        self.errors: list[str] = []
        threading.Thread(target=self._read_errors, daemon=True).start()
        threading.Thread(target=self._read_banner, daemon=True).start()
        deadline = time.monotonic() + 30
        while not self.banner:
            assert time.monotonic() < deadline, f"no banner after 30 s: {self.log}"
            assert self.process.poll() is None, f"the console exited: {self.log}"
            time.sleep(0.02)
        self.base = self.banner.split("serving ")[1].split()[0].rstrip("/")

    def _read_banner(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            if "serving http://" in line and not self.banner:
                self.banner = line

    def _read_errors(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.errors.append(line)

    @property
    def log(self) -> str:
        return "".join(self.errors)

    def get(self, path: str, *, method: str = "GET", headers: dict[str, str] | None = None) -> Page:
        request = urllib.request.Request(self.base + path, method=method, headers=headers or {})
        try:
            with _OPENER.open(request, timeout=60) as answer:
                return Page(answer.status, answer.headers, answer.read())
        except urllib.error.HTTPError as error:
            return Page(error.code, error.headers, error.read())

    def lines(self, event: str) -> list[dict[str, Any]]:
        """The structured log lines (``service.logging``) on stderr so far whose event is
        ``event``."""
        found = []
        for line in list(self.errors):
            try:
                said = json.loads(line)
            except ValueError:
                continue
            if isinstance(said, dict) and said.get("event") == event:
                found.append(said)
        return found

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.terminate()
        return self.process.wait(timeout=30)


WAIT = 30.0  # seconds a test waits for something that should happen at once, before failing


class Gate:
    """A gRPC server that passes every unary call on to the service at ``address``, as bytes,
    but, while closed, holds each call until ``open``: a console in front of it (``address``)
    has as many calls under way as the test lets it. ``arrived`` lists the methods called, in
    the order they arrived."""

    def __init__(self, upstream: str) -> None:
        self._upstream = grpc.insecure_channel(upstream)
        self._through = threading.Event()
        self._through.set()
        self._changed = threading.Condition()
        self.arrived: list[str] = []
        self._server = grpc.server(ThreadPoolExecutor(max_workers=16), handlers=[_Forward(self)])
        self.address = f"127.0.0.1:{self._server.add_insecure_port('127.0.0.1:0')}"
        self._server.start()

    def close(self) -> None:
        """Hold every call from now on."""
        self._through.clear()

    def open(self) -> None:
        """Let the held calls and every later one through."""
        self._through.set()

    def wait_for(self, check: Callable[[list[str]], bool], what: str) -> None:
        """Until ``check(arrived)`` holds; fails after ``WAIT`` seconds."""
        with self._changed:
            if not self._changed.wait_for(lambda: check(list(self.arrived)), timeout=WAIT):
                raise AssertionError(f"gave up waiting for {what}; arrived: {self.arrived}")

    def pass_on(self, method: str, request: bytes, context: grpc.ServicerContext) -> bytes:
        with self._changed:
            self.arrived.append(method.rsplit("/", 1)[1])
            self._changed.notify_all()
        if not self._through.wait(timeout=120):
            context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "the test never opened the gate")
        try:
            call: grpc.UnaryUnaryMultiCallable[bytes, bytes] = self._upstream.unary_unary(method)
            answer = call(request, timeout=60)
        except grpc.RpcError as error:  # the service's refusal, passed on as it said it
            assert isinstance(error, grpc.Call)
            trailing = tuple((str(k), v) for k, v in error.trailing_metadata() or ())
            context.set_trailing_metadata(trailing)
            context.abort(error.code(), error.details() or "")
        return answer

    def stop(self) -> None:
        self.open()
        self._server.stop(grace=None)
        self._upstream.close()


class _Forward(grpc.GenericRpcHandler):
    def __init__(self, gate: Gate) -> None:
        self.gate = gate

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler[bytes, bytes]:
        method: str = details.method

        def handle(request: bytes, context: grpc.ServicerContext) -> bytes:
            return self.gate.pass_on(method, request, context)

        return grpc.unary_unary_rpc_method_handler(handle)  # no (de)serializers: bytes as sent
