"""Issue 24: the transparency log checked by Go's reference code (golang.org/x/mod/sumdb/note and
sumdb/tlog, with crypto/ed25519 for the C2SP cosignature x/mod 0.7.0 predates), not by ours.

A real ``thirteen serve`` writes a log of a few thousand events (rounds at several tables
played at once, players with names JSON must not escape), a real ``thirteen witness --once``
cosigns it, and everything the Go program checks is what the server answered: the checkpoints
it signed as the log grew, inclusion proofs (``GetInclusionProof``, ``ExportRound``) and
consistency proofs (``GetConsistencyProof``). The leaves are read from the store with the
service's own code, as ``thirteen audit --all`` reads them, and an exported event's leaf data is
computed as ``thirteen audit --file`` computes it. The Go program recomputes every leaf hash and
root itself; one byte of ours that differs fails it, and a few changed bytes show it does."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import threading
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.e2e.helpers import wait_until
from tests.e2e.test_witness import Serve, Setup, keys
from tests.interop.served import b64, take_log


def run(verifier: Path, directory: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(verifier), "-dir", str(directory), *extra], capture_output=True, text=True, timeout=120
    )


def tiles_url(server: Serve) -> str:
    """Where ``serve --tiles`` serves the log, as it said on stderr."""
    said = "thirteen: serving the log's tiles on "
    line = wait_until(
        lambda: next((line for line in server.lines if line.startswith(said)), None),
        "serve to say where its tiles are",
    )
    return line[len(said) :].strip().rstrip("/")


def test_go_reference_code_verifies_our_notes_tree_proofs_cosignature_and_tiles(
    go_verifier: Path, tmp_path: Path, store: dict[str, str]
) -> None:
    log_pub = keys(tmp_path / "log", "--name", "thirteen.test/log")
    witness_pub = keys(tmp_path / "w", "--witness", "--name", "witness.test/w1")
    setup = Setup(tmp_path, log_pub, witness_pub, store)
    given = tmp_path / "given"
    server = setup.serve("--tiles", "127.0.0.1:0")
    try:
        tiles = tiles_url(server)
        head = take_log(server, setup, given)
        passed = run(go_verifier, given, "-tiles", tiles)
        print(passed.stdout, end="")  # the Go program's own account, one line per check
        assert passed.returncode == 0, passed.stdout + passed.stderr
        lines = passed.stdout.splitlines()
        assert len(lines) == 13 and all(line.startswith("ok   ") for line in lines[:-1]), lines
        assert f"{head.size} leaves" in lines[1] and "witness.test/w1" in lines[7], lines
        assert lines[-2].startswith(f"ok   {-(-head.size // 256)} entry bundles"), lines
        caught = tampered_tiles_are_caught(go_verifier, given, tiles)
        assert caught == sorted(TAMPERED_TILES), caught
    finally:
        server.stop()

    caught = changed_bytes_are_caught(go_verifier, given, tmp_path / "changed")
    assert caught == sorted(CHANGES), caught


# One bit of a tile changed on its way: the Go program must catch it ------------------------------


TAMPERED_TILES = {
    "/tile/0/000": "FAIL tiles: ",  # tlog.TileHashReader's authentication
    "/tile/1/000.p/": "FAIL tiles: ",
    "/tile/entries/000": "FAIL entry bundle tile/entries/000: entry ",
}


@contextmanager
def tampering(upstream: str, target: str) -> Iterator[str]:
    """A proxy to ``upstream`` that flips one bit of the answer to a path starting with
    ``target``; its URL."""

    class Proxy(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with urllib.request.urlopen(upstream + self.path, timeout=30) as answer:
                body = bytearray(answer.read())
            if self.path.startswith(target):
                body[len(body) // 2] ^= 1
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(bytes(body))

        def log_message(self, *args: Any) -> None:
            pass

    proxy = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{proxy.server_address[1]}"
    finally:
        proxy.shutdown()
        proxy.server_close()


def tampered_tiles_are_caught(verifier: Path, given: Path, tiles: str) -> list[str]:
    caught = []
    for target, said in TAMPERED_TILES.items():
        with tampering(tiles, target) as url:
            done = run(verifier, given, "-tiles", url)
        if done.returncode == 1 and said in done.stdout:
            caught.append(target)
        else:
            print(f"not caught: {target} (exit status {done.returncode})\n{done.stdout}")
    return sorted(caught)


# One byte of ours changed: the Go program must say which check it fails --------------------------


def flip(encoded: str, at: int = -1) -> str:
    """``encoded`` (base64) with one bit of its byte ``at`` flipped."""
    raw = bytearray(base64.b64decode(encoded))
    raw[at] ^= 1
    return b64(bytes(raw))


def edit_json(directory: Path, change: Callable[[dict[str, Any]], None]) -> None:
    path = directory / "proofs.json"
    proofs = json.loads(path.read_text(encoding="utf-8"))
    change(proofs)
    path.write_text(json.dumps(proofs), encoding="utf-8")


def edit_line(path: Path, pick: Callable[[list[str]], int], change: Callable[[str], str]) -> None:
    lines = path.read_text(encoding="utf-8").split("\n")
    at = pick(lines)
    lines[at] = change(lines[at])
    path.write_text("\n".join(lines), encoding="utf-8")


def signature_line(name: str) -> Callable[[list[str]], int]:
    return lambda lines: next(i for i, line in enumerate(lines) if line.startswith(f"— {name} "))


def flip_signature(line: str) -> str:
    dash, name, encoded = line.split(" ")
    return f"{dash} {name} {flip(encoded)}"


def first(source: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda proofs: next(p for p in proofs["inclusion"] if p["source"] == source)


def flip_first_hash(proof: dict[str, Any]) -> None:
    proof["hashes"][0] = flip(proof["hashes"][0])


def flip_leaf(line: str) -> str:
    position, encoded = line.split(" ")
    data = bytearray(base64.b64decode(encoded))
    data[len(data) // 2] ^= 1
    return f"{position} {b64(bytes(data))}"


CHANGES: dict[str, tuple[Callable[[Path], None], str]] = {
    "a bit of the log's signature": (
        lambda d: edit_line(d / "checkpoint", signature_line("thirteen.test/log"), flip_signature),
        "FAIL checkpoint: note.Open: invalid signature",
    ),
    "a bit of the witness's cosignature": (
        lambda d: edit_line(d / "checkpoint", signature_line("witness.test/w1"), flip_signature),
        "FAIL cosignature by witness.test/w1",
    ),
    "a bit of a leaf's data": (
        lambda d: edit_line(d / "leaves", lambda lines: len(lines) // 2, flip_leaf),
        "FAIL tree hash",
    ),
    "a bit of an inclusion proof": (
        lambda d: edit_json(d, lambda p: flip_first_hash(first("GetInclusionProof")(p))),
        "FAIL inclusion proof (GetInclusionProof)",
    ),
    "a bit of an exported event's leaf data": (
        lambda d: edit_json(
            d, lambda p: first("ExportRound")(p).update(data=flip(first("ExportRound")(p)["data"]))
        ),
        "is not the log's (",
    ),
    "a bit of a consistency proof": (
        lambda d: edit_json(
            d, lambda p: flip_first_hash(next(c for c in p["consistency"] if c["hashes"]))
        ),
        "FAIL consistency proof from",
    ),
    "a line added to an earlier checkpoint": (
        lambda d: edit_json(
            d,
            lambda p: p["checkpoints"].__setitem__(
                0, p["checkpoints"][0].replace("\n\n", "\nextension\n\n", 1)
            ),
        ),
        "FAIL earlier checkpoint: note.Open: invalid signature",
    ),
}


def changed_bytes_are_caught(verifier: Path, given: Path, work: Path) -> list[str]:
    """The changes the Go program catches: exit status 1 and the failing check named."""
    caught = []
    for what, (change, said) in CHANGES.items():
        changed = work / what.replace(" ", "-").replace("'", "")
        shutil.copytree(given, changed)
        change(changed)
        done = run(verifier, changed)
        if done.returncode == 1 and said in done.stdout:
            caught.append(what)
        else:
            print(f"not caught: {what} (exit status {done.returncode})\n{done.stdout}")
    return sorted(caught)


def test_the_verifier_refuses_a_directory_it_cannot_read(go_verifier: Path, tmp_path: Path) -> None:
    done = run(go_verifier, tmp_path)
    assert done.returncode == 2 and "log.pub" in done.stderr, done.stderr
