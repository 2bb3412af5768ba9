"""Several replicas on one PostgreSQL store: exactly one keeps the views, and another takes
over when it dies (issue 4 §2)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import grpc
import pytest

from service._generated.thirteen.v1 import (
    results_pb2,
    results_pb2_grpc,
    table_pb2,
    table_pb2_grpc,
    wallet_pb2,
    wallet_pb2_grpc,
)
from tests.support.seed_key import ensure_log_key, ensure_seed_key
from tests.support.stores import store_environ

SCRIPT = Path(sys.executable).parent / "thirteen"


class Replica:
    """``thirteen serve`` in a process of its own; its JSON log lines are collected."""

    def __init__(self, environ: dict[str, str], data: Path, *extra: str) -> None:
        seed_key = ensure_seed_key(data.parent / "seed.key")  # every replica: the same file
        if "--log-key" not in extra:  # and the same log key
            extra = (*extra, "--log-key", str(data.parent / "log.key"))
        ensure_log_key(data, extra, environ)
        self.process = subprocess.Popen(
            [
                *(str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(data)),
                *("--seed-key", str(seed_key)),
                *extra,
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **environ},
        )
        self.lines: list[str] = []
        self.port = 0
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 30
        while not self.port:
            assert time.monotonic() < deadline, "\n".join(self.lines)
            assert self.process.poll() is None, "\n".join(self.lines)
            time.sleep(0.05)
        self.address = f"127.0.0.1:{self.port}"
        self.channel = grpc.insecure_channel(self.address)

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.lines.append(line)
            if "serving gRPC on" in line:
                self.port = int(line.split("serving gRPC on ")[1].split()[0].rsplit(":", 1)[1])

    def live(self) -> int:
        """How many replicas this one last counted live (issue 21; 0: it routes nothing)."""
        counted = [
            json.loads(line)["live"]
            for line in self.lines
            if line.startswith("{") and '"replicas_live"' in line
        ]
        return len(counted[-1]) if counted else 0

    def leading(self) -> bool:
        return any(
            json.loads(line).get("event") == "projector_leading"
            for line in self.lines
            if line.startswith("{")
        )

    def stop(self) -> None:
        self.channel.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            self.process.wait(timeout=20)


def _play_round(channel: grpc.Channel, tag: str) -> str:
    wallets = wallet_pb2_grpc.WalletServiceStub(channel)
    tables = table_pb2_grpc.TableServiceStub(channel)
    for p in "AB":
        wallets.Credit(
            wallet_pb2.CreditRequest(player_id=f"{tag}{p}", amount=100, transfer_id=f"{tag}{p}")
        )
    tables.OpenTable(table_pb2.OpenTableRequest(table_id=tag))
    for p in "AB":
        tables.SitDown(table_pb2.SitDownRequest(table_id=tag, player_id=f"{tag}{p}"))
    dealt = tables.Deal(table_pb2.DealRequest(table_id=tag))
    return dealt.round_id


def _wait_for(predicate: Callable[[], object], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_one_projector_leads_and_another_takes_over_when_it_is_killed(tmp_path: Path) -> None:
    with store_environ("postgres", tmp_path) as environ:
        first = Replica(environ, tmp_path / "a")
        second = Replica(environ, tmp_path / "b")
        try:
            _wait_for(lambda: first.leading() or second.leading())
            time.sleep(1.5)  # the other has tried the lock at least once by now
            assert first.leading() != second.leading()
            leader, survivor = (first, second) if first.leading() else (second, first)
            leader.process.send_signal(signal.SIGKILL)
            leader.process.wait(timeout=10)
            # A round that ends now: one of its two players escapes, so it is abandoned (R11.3)
            # and the new leader must project it.
            round_id = _play_round(survivor.channel, "after-kill")
            tables = table_pb2_grpc.TableServiceStub(survivor.channel)
            tables.StandUp(table_pb2.StandUpRequest(table_id="after-kill", player_id="after-killA"))
            _wait_for(survivor.leading)
            results = results_pb2_grpc.ResultsServiceStub(survivor.channel)

            def projected() -> list[str]:
                return [
                    r.round_id
                    for r in results.ListRoundResults(
                        results_pb2.ListRoundResultsRequest(table_id="after-kill")
                    ).rounds
                ]

            _wait_for(lambda: projected() == [round_id])
        finally:
            first.stop()
            second.stop()


@pytest.mark.parametrize("kind", ["sqlite"])
def test_serve_refuses_a_bad_store_setting_with_one_line(kind: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "THIRTEEN_STORE": "mongo"},
    )
    assert done.returncode == 2
    assert "THIRTEEN_STORE must be one of sqlite, postgres" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_second_server_on_a_taken_port_fails_instead_of_sharing_it(tmp_path: Path) -> None:
    first = Replica({"THIRTEEN_STORE": "sqlite"}, tmp_path / "a")
    try:
        done = subprocess.run(
            [
                str(SCRIPT),
                "serve",
                "--address",
                f"127.0.0.1:{first.port}",
                "--data",
                str(tmp_path / "b"),
            ],
            capture_output=True,
            text=True,
            timeout=30,
            env={**os.environ, "THIRTEEN_STORE": "sqlite"},
        )
        assert done.returncode == 1
        assert f"cannot listen on 127.0.0.1:{first.port}" in done.stderr
        assert "Traceback" not in done.stderr
    finally:
        first.stop()


def test_sigterm_drains_and_stops_gracefully(tmp_path: Path) -> None:
    replica = Replica({"THIRTEEN_STORE": "sqlite"}, tmp_path / "a")
    replica.channel.close()
    replica.process.send_signal(signal.SIGTERM)
    assert replica.process.wait(timeout=20) == 0
    _wait_for(lambda: any('"stopped"' in line for line in replica.lines), timeout=5)
    assert any('"shutting_down"' in line for line in replica.lines)
