"""``thirteen serve --metrics HOST:PORT`` (issue 13): the real console script serves Prometheus
metrics beside gRPC and stops serving them with the server; an address it cannot listen on is
one line before the store is opened: exit status 2 when it is not HOST:PORT, 1 when it is taken
or not this machine's (as the gRPC port, and ``thirteen console``)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2
from prometheus_client.parser import text_string_to_metric_families

from tests.cli.test_serve_refuses import one_line_refusal
from tests.support.health import health_stub

SCRIPT = Path(sys.executable).parent / "thirteen"
BANNER = "thirteen: serving metrics on "
ADDRESSES = ("--address", "127.0.0.1:0", "--metrics", "127.0.0.1:0")  # ports picked for us


def serve(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(data), *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "THIRTEEN_STORE": "sqlite"},
    )


def test_an_address_that_is_not_host_and_port_is_refused(tmp_path: Path) -> None:
    line = one_line_refusal(serve(tmp_path / "data", "--metrics", "9464"))
    assert "--metrics" in line and "HOST:PORT" in line
    assert not (tmp_path / "data").exists()


def test_a_host_that_is_not_this_machines_is_refused_with_status_1(tmp_path: Path) -> None:
    for host in ("no-such-host.invalid", "192.0.2.1"):  # no name; TEST-NET-1, nobody's
        done = serve(tmp_path / "data", "--metrics", f"{host}:9464")
        line = one_line_refusal(done, status=1)
        assert line.startswith(f"thirteen serve: cannot listen for metrics on {host}:9464: ")
    assert not (tmp_path / "data").exists()  # refused before the store is opened


def test_a_port_in_use_is_refused_with_status_1_before_the_store_is_opened(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve(tmp_path / "data", "--metrics", f"127.0.0.1:{port}")
        line = one_line_refusal(done, status=1)
    assert line == (
        f"thirteen serve: cannot listen for metrics on 127.0.0.1:{port}: Address already in use"
    )
    assert not (tmp_path / "data").exists()


def test_serve_says_where_it_serves_metrics_and_stops_serving_them_on_sigterm(
    tmp_path: Path,
) -> None:
    process = subprocess.Popen(
        [str(SCRIPT), "serve", "--data", str(tmp_path), *ADDRESSES],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "THIRTEEN_STORE": "sqlite"},
    )
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stderr or ()), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 30
        while not any(BANNER in line for line in lines):
            assert time.monotonic() < deadline and process.poll() is None, "".join(lines)
            time.sleep(0.05)
        banner = next(line for line in lines if BANNER in line)
        url = banner.split(BANNER)[1].strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/metrics"), banner
        grpc_line = next(line for line in lines if "serving gRPC on" in line)
        address = grpc_line.split("serving gRPC on ")[1].split()[0]
        with grpc.insecure_channel(address) as channel:
            health = health_stub(channel)
            for _ in range(2):
                health.Check(health_pb2.HealthCheckRequest(), timeout=10)
        with urllib.request.urlopen(url, timeout=10) as answer:
            text = answer.read().decode()
        checks = {
            sample.labels["code"]: sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "thirteen_rpc_requests_total"
            and sample.labels["method"] == "Check"
            and sample.labels["service"] == "grpc.health.v1.Health"
        }
        assert checks == {"OK": 2}
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0, "".join(lines)
    reader.join(timeout=5)
    try:
        urllib.request.urlopen(url, timeout=5)
    except OSError:
        pass
    else:
        raise AssertionError(f"{url} still answers after the server stopped")
