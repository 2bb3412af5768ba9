"""No unrevealed server seed at rest (issue 11, R12.1): a real ``thirteen serve`` plays many
rounds at a few tables, with escapes (one that ends its round, one that does not) among the
reveals, while the test copies the store (SQLite's files with their WAL, or every PostgreSQL
row of the schema) and the server's log at many moments. No round's seed, in hex, raw or base64,
is in any copy taken before its reveal; the seed key itself is in no copy at all. Restarted with
a key file that lacks the key, a deal is refused naming the key id, and nothing is stored;
restarted with the right file, the committed round deals as published."""

from __future__ import annotations

import base64
import hashlib
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from domain.fairness.seeds import key_id
from service._generated.thirteen.v1 import table_pb2, table_pb2_grpc, wallet_pb2_grpc
from service.seed_keys import read
from tests.e2e.helpers import (
    arrange_well,
    deal,
    get_round,
    get_table,
    hands_of,
    refusal_of,
    reveal,
    seated_table,
    sit,
    stand,
)
from tests.support.seed_key import ensure_log_key, ensure_seed_key
from tests.support.stores import PG

SCRIPT = Path(sys.executable).parent / "thirteen"
TABLES = {"a": 2, "b": 3, "c": 4}  # players per table
ROUNDS = 7  # per table: 21 rounds in all


class Serve:
    """``thirteen serve`` in a process of its own, its log (stderr) in a file."""

    def __init__(self, data: Path, environ: dict[str, str], log: Path, *extra: str) -> None:
        self.log = log
        ensure_log_key(data, extra, environ)
        with log.open("wb") as sink:
            self.process = subprocess.Popen(
                [str(SCRIPT), "serve", "--address", "127.0.0.1:0", "--data", str(data), *extra],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=sink,
                env={**os.environ, **environ},
            )
        deadline = time.monotonic() + 60
        while "serving gRPC on" not in self.text():
            assert self.process.poll() is None, self.text()
            assert time.monotonic() < deadline, self.text()
            time.sleep(0.05)
        line = next(x for x in self.text().splitlines() if "serving gRPC on" in x)
        port = line.split("serving gRPC on ")[1].split()[0].rsplit(":", 1)[1]
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.tables = table_pb2_grpc.TableServiceStub(self.channel)
        self.wallets = wallet_pb2_grpc.WalletServiceStub(self.channel)

    def text(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    def stop(self) -> None:
        self.channel.close()
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=30)


@dataclass
class Copies:
    """What someone reading the disk (or the database) would have had at each moment."""

    data: Path
    environ: dict[str, str]
    logs: list[Path]
    taken: list[bytes] = field(default_factory=list)
    revealed: list[tuple[bytes, int]] = field(default_factory=list)  # seed, copies before it

    def take(self) -> None:
        blobs = [log.read_bytes() for log in self.logs if log.exists()]
        if self.environ["THIRTEEN_STORE"] == "sqlite":
            blobs += [
                f.read_bytes()
                for f in sorted(self.data.iterdir())
                if f.is_file() and f.name != "seed.key"
            ]
        else:
            blobs += _postgres_rows(self.environ["POSTGRES_SCHEMA"])
        self.taken.append(b"\0".join(blobs))

    def reveals(self, server_seed: str) -> None:
        assert len(server_seed) == 64, server_seed
        self.revealed.append((bytes.fromhex(server_seed), len(self.taken)))


def _postgres_rows(schema: str) -> list[bytes]:
    """Every row of every table of the schema, as PostgreSQL's text form of it, and the bytes
    of every ``bytea`` value (the stored events) as they are."""
    import psycopg
    from psycopg import sql

    with psycopg.connect(autocommit=True, **PG) as conn:
        columns = conn.execute(
            "SELECT table_name, column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = %s",
            (schema,),
        ).fetchall()
        rows: list[bytes] = []
        for table in sorted({t for t, _, _ in columns}):
            name = sql.Identifier(schema, table)
            query = sql.SQL("SELECT t::text FROM {} t").format(name)
            rows += [str(r[0]).encode() for r in conn.execute(query)]
            for column in [c for t, c, kind in columns if t == table and kind == "bytea"]:
                query = sql.SQL("SELECT {} FROM {}").format(sql.Identifier(column), name)
                rows += [bytes(r[0]) for r in conn.execute(query) if r[0] is not None]
        assert any(b'"commitment"' in row for row in rows), "no stored event was read"
        return rows


def _forms(secret: bytes) -> list[bytes]:
    """How a secret could be written down: hex either case, raw, base64 (either alphabet)."""
    return [
        secret.hex().encode(),
        secret.hex().upper().encode(),
        secret,
        base64.b64encode(secret).rstrip(b"="),
        base64.urlsafe_b64encode(secret).rstrip(b"="),
    ]


def _play(server: Serve, copies: Copies) -> None:
    """Rounds at every table in turn; an escape that ends a round at the two-player table and
    one that does not at the three-player table, each in round 3."""
    for table, seats in TABLES.items():
        players = {f"{table}{k}": 1_000_000 for k in range(seats)}
        seated_table(server, table, players)
    copies.take()
    for n in range(1, ROUNDS + 1):
        for table, seats in TABLES.items():
            dealt = deal(server, table, f"client-{table}-{n}")
            copies.take()
            if n == 3 and seats <= 3:
                escaped = stand(server, table, f"{table}0")
                assert escaped.escaped
                if seats == 2:  # one player left: the round ends, its seed is published
                    ended = get_round(server, dealt.round_id)
                    assert ended.phase == table_pb2.ROUND_PHASE_ABANDONED
                    copies.reveals(ended.server_seed)
                    sit(server, table, f"{table}0")
                    copies.take()
                    continue
                arrange_well(server, dealt, [p for p in hands_of(dealt) if p != f"{table}0"])
            else:
                arrange_well(server, dealt)
            copies.take()
            copies.reveals(reveal(server, dealt.round_id).server_seed)
            copies.take()
            if n == 3 and seats == 3:
                sit(server, table, f"{table}0")


def test_no_server_seed_is_at_rest_before_its_reveal_and_the_key_never_is(
    store: dict[str, str], tmp_path: Path
) -> None:
    data = tmp_path / "data"
    logs = [tmp_path / "serve-1.log", tmp_path / "serve-2.log", tmp_path / "serve-3.log"]
    copies = Copies(data, store, logs)
    if store.get("THIRTEEN_STORE") == "postgres":  # only the SQLite default is made by serve
        ensure_seed_key(data / "seed.key")
    server = Serve(data, store, logs[0])
    try:
        if store.get("THIRTEEN_STORE") != "postgres":
            assert f"created the seed key file {data / 'seed.key'}" in server.text()
        _play(server, copies)
    finally:
        server.stop()
    copies.take()
    assert len(copies.revealed) == ROUNDS * len(TABLES) and len(copies.taken) > 60
    assert len({seed for seed, _ in copies.revealed}) == len(copies.revealed)
    for seed, before in copies.revealed:
        assert before > 0
        for k, copy in enumerate(copies.taken[:before]):
            found = [form for form in _forms(seed) if form in copy]
            assert not found, f"seed {seed.hex()} at rest in copy {k}, before its reveal"
        assert seed.hex().encode() in copies.taken[before]  # published at the reveal (R12.6)

    ring = read(data / "seed.key")
    (key,) = ring.keys.values()
    assert key_id(key) == ring.current
    for k, copy in enumerate(copies.taken):
        assert not [form for form in _forms(key) if form in copy], f"the seed key in copy {k}"

    # A server given a key file without the key: the deal is refused and stores nothing.
    other = tmp_path / "other.key"
    other.write_text(hashlib.sha256(b"another key").hexdigest() + "\n")
    other.chmod(0o600)
    server = Serve(data, store, logs[1], "--seed-key", str(other))
    try:
        table_before = get_table(server, "c")
        refused = refusal_of(server.tables.Deal, table_pb2.DealRequest(table_id="c"))
        assert refused.code == grpc.StatusCode.FAILED_PRECONDITION
        assert refused.reason == "SEED_KEY_MISSING"
        assert f"seed key '{ring.current}' is not in" in refused.message
        assert get_table(server, "c") == table_before
    finally:
        server.stop()
    # The right file again: the round committed before the restarts deals as published.
    server = Serve(data, store, logs[2])
    try:
        dealt = deal(server, "c", "after-restarts")
        assert dealt.commitment == table_before.next_commitment
        arrange_well(server, dealt)
        seed = bytes.fromhex(reveal(server, dealt.round_id).server_seed)
        assert hashlib.sha256(seed).hexdigest() == table_before.next_commitment
    finally:
        server.stop()
