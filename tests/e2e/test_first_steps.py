"""What a new user tries first, as the README and `make run` show it (issue 23, finding 4):
`buf curl` against a fresh store, its ExportRound output given to `thirteen audit --file`, a
mistyped receipt, error details a reflection client can decode, the demo against a TLS server,
and the dispute console with the identity `dev-certs` writes for it."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc

from tests.support.cli import thirteen
from tests.support.console import Console
from tests.support.serve_process import ServeProcess
from tests.support.server import ServerThread

from .helpers import arrange_well, deal, reveal, seated_table

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
BUF = BIN / "buf"


def _buf_curl(
    address: str, method: str, data: dict[str, object]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            BUF,
            "curl",
            "--protocol",
            "grpc",
            "--http2-prior-knowledge",
            "--data",
            json.dumps(data),
            f"http://{address}/{method}",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def _revealed(server: ServerThread) -> tuple[str, str]:
    seated_table(server, "first", {"first-a": 500, "first-b": 500})
    dealt = deal(server, "first", client_seed="first steps")
    arrange_well(server, dealt)
    return dealt.round_id, reveal(server, dealt.round_id).receipt


def _banner_commands(address: str) -> list[list[str]]:
    """The `buf curl` lines `make run` prints, as a shell would split them."""
    commands = []
    for line in (ROOT / "Makefile").read_text().splitlines():
        if "buf curl" in line and line.strip().startswith('@echo "'):
            shown = line.strip()[len('@echo "') : -1].replace('\\"', '"')
            shown = shown.replace("$(BIN)", str(BIN)).replace("$(ADDRESS)", address)
            commands.append(shlex.split(shown))
    return commands


def test_the_calls_make_run_suggests_answer_on_a_fresh_store(server: ServerThread) -> None:
    commands = _banner_commands(server.address)
    assert commands, "make run shows no buf curl line"
    for command in commands:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode == 0, done.stderr or done.stdout
    assert json.loads(done.stdout)["balance"] == "100"


def test_audit_file_reads_the_export_as_buf_curl_prints_it(
    server: ServerThread, tmp_path: Path
) -> None:
    round_id, receipt = _revealed(server)
    exported = _buf_curl(
        server.address, "thirteen.v1.AuditService/ExportRound", {"round_id": round_id}
    )
    assert exported.returncode == 0, exported.stderr
    assert set(json.loads(exported.stdout)) == {"document"}
    export = tmp_path / "export.json"
    export.write_text(exported.stdout)
    audited = thirteen("audit", "--file", export, "--receipt", receipt)
    assert audited.returncode == 0, audited.stdout + audited.stderr
    assert "FAIL" not in audited.stdout


def test_a_file_that_is_no_export_is_one_line_that_says_what_to_give(tmp_path: Path) -> None:
    export = tmp_path / "export.json"
    export.write_text('{"round_id": "r"}')
    done = thirteen("audit", "--file", export)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert done.stderr.count("not a round export") == 1
    assert "ExportRound" in done.stderr and "buf curl" in done.stderr


def test_a_malformed_receipt_is_bad_input_not_tampering(tmp_path: Path) -> None:
    done = thirteen("audit", "--file", tmp_path / "export.json", "--receipt", "bogus")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    assert "64 hex digits" in done.stderr
    assert "FAIL" not in done.stdout


def test_reflection_serves_the_error_details_with_the_api(server: ServerThread) -> None:
    """A client that learns the API by reflection (``buf curl``, grpcurl) gets the file of
    ``google.rpc.ErrorInfo`` with the API's own, so it can decode the errors' details."""
    stub: Any = reflection_pb2_grpc.ServerReflectionStub(server.channel)
    request = reflection_pb2.ServerReflectionRequest(
        file_containing_symbol="thirteen.v1.WalletService"
    )
    (answer,) = stub.ServerReflectionInfo(iter([request]), timeout=30)
    names = set()
    for raw in answer.file_descriptor_response.file_descriptor_proto:
        file = descriptor_pb2.FileDescriptorProto.FromString(raw)
        names.add(file.name)
    assert {"thirteen/v1/wallet.proto", "google/rpc/error_details.proto"} <= names


def test_the_demo_against_a_tls_server_says_it_serves_tls(tmp_path: Path) -> None:
    certs = tmp_path / "certs"
    assert thirteen("dev-certs", certs).returncode == 0
    served = ServeProcess(
        tmp_path / "data",
        "--tls-cert",
        str(certs / "server.pem"),
        "--tls-key",
        str(certs / "server.key"),
        credentials=grpc.ssl_channel_credentials((certs / "ca.pem").read_bytes()),
    )
    try:
        done = thirteen("demo", "--address", served.address, "--rounds", "1")
    finally:
        served.stop()
    assert done.returncode != 0
    assert "serves TLS" in done.stderr and "--ca" in done.stderr
    assert "is `thirteen serve`" not in done.stderr


def test_the_console_reads_rounds_with_the_identity_dev_certs_writes_for_it(
    tmp_path: Path,
) -> None:
    certs = tmp_path / "certs"
    assert thirteen("dev-certs", certs).returncode == 0
    tls = ["--ca", str(certs / "ca.pem")]
    served = ServeProcess(
        tmp_path / "data",
        "--tls-cert",
        str(certs / "server.pem"),
        "--tls-key",
        str(certs / "server.key"),
        "--client-ca",
        str(certs / "ca.pem"),
        "--policy",
        str(certs / "policy.toml"),
        credentials=grpc.ssl_channel_credentials(
            (certs / "ca.pem").read_bytes(),
            (certs / "admin.key").read_bytes(),
            (certs / "admin.pem").read_bytes(),
        ),
    )
    try:
        played = thirteen(
            "demo",
            "--address",
            served.address,
            "--rounds",
            "1",
            *tls,
            "--cert",
            certs / "admin.pem",
            "--key",
            certs / "admin.key",
        )
        assert played.returncode == 0, played.stderr
        player = re.findall(r"^ {4}(\w+-\w+) ", played.stdout, re.MULTILINE)[0]
        console = Console(
            served.address,
            *tls,
            "--cert",
            str(certs / "console.pem"),
            "--key",
            str(certs / "console.key"),
        )
        try:
            page = console.get(f"/players/{player}")
            assert page.status == 200, page.text
            round_link = re.findall(r'href="(/rounds/[^"]+)"', page.text)[0]
            assert console.get(round_link).status == 200  # the export: the auditor role
        finally:
            console.process.terminate()
            console.process.wait(timeout=30)
    finally:
        served.stop()
