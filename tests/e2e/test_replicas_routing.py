"""Replicas that route each table's commands to its owner (issue 21), tried where routing can go
wrong: the owner killed with SIGKILL in the middle of a round and started again, a replica
added while tables play, and callers forging the headers one replica gives another. Real
``thirteen serve`` processes on one PostgreSQL schema, each listing the others in a peers file
that the test rewrites as their ports become known."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import grpc
from prometheus_client.parser import text_string_to_metric_families

from service._generated.thirteen.v1 import (
    results_pb2,
    table_pb2,
    table_pb2_grpc,
    wallet_pb2,
    wallet_pb2_grpc,
)
from service.routing.owners import owner
from tests.e2e.helpers import good_piles, hands_of, wait_until
from tests.e2e.test_replicas import SCRIPT, Replica
from tests.e2e.test_replicas_share_tables import Side
from tests.support.certs import Authority
from tests.support.stores import store_environ

T = TypeVar("T")
SEATS = 4
START = 40_000
ON_BEHALF = "x-thirteen-on-behalf-of-bin"  # written out here, not read from the code under test
RETRY_FOR = 60.0  # seconds a client keeps retrying UNAVAILABLE: generous, not a target


class Cluster:
    """Replicas on one store that list each other in ``listing``."""

    def __init__(self, environ: dict[str, str], tmp: Path) -> None:
        self.environ, self.tmp = environ, tmp
        self.listing = tmp / "peers"
        self.listing.write_text("")
        self.replicas: list[Replica] = []

    def start(self, name: str) -> Replica:
        flags = ("--peers-file", str(self.listing), "--log-level", "debug")
        replica = Replica(self.environ, self.tmp / name, *flags)
        self.replicas.append(replica)
        self.publish()
        return replica

    def running(self) -> list[Replica]:
        return [r for r in self.replicas if r.process.poll() is None]

    def publish(self) -> None:
        """List the running replicas, and wait until each counts them all live."""
        running = self.running()
        self.listing.write_text("".join(f"{r.address}\n" for r in running))
        wait_until(
            lambda: all(r.live() == len(running) for r in running),
            "every replica to count the others live",
            timeout=30,
        )

    def owned_by(self, replica: Replica, prefix: str) -> Iterator[str]:
        """Table ids the live replicas would give ``replica``."""
        live = [r.address for r in self.running()]
        for n in itertools.count():
            table = f"{prefix}{n}"
            if owner(table, live) == replica.address:
                yield table

    def stop(self) -> None:
        for replica in self.replicas:
            replica.stop()


@contextmanager
def cluster(tmp: Path) -> Iterator[Cluster]:
    with store_environ("postgres", tmp) as environ:
        started = Cluster(environ, tmp)
        try:
            yield started
        finally:
            started.stop()


def retrying(call: Callable[[], T]) -> T:
    """What a client does with a retryable answer: ``UNAVAILABLE`` is tried again."""
    deadline = time.monotonic() + RETRY_FOR
    while True:
        try:
            return call()
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def seat(side: Side, table: str, arrange_seconds: int = 60) -> list[str]:
    players = [f"{table}p{k}" for k in range(SEATS)]
    for p in players:
        side.wallets.Credit(
            wallet_pb2.CreditRequest(player_id=p, amount=START, transfer_id=f"in-{p}")
        )
    opened = table_pb2.OpenTableRequest(table_id=table)
    opened.ruleset_parameters.arrange_seconds = arrange_seconds
    side.tables.OpenTable(opened)
    for p in players:
        side.tables.SitDown(table_pb2.SitDownRequest(table_id=table, player_id=p))
    return players


def arrange(side: Side, round_id: str, player: str, cards: list[str]) -> None:
    front, middle, back = good_piles(cards)
    request = table_pb2.ArrangeRequest(
        round_id=round_id, player_id=player, front=front, middle=middle, back=back
    )
    assert not retrying(lambda: side.tables.Arrange(request)).foul


def play(side: Side, table: str, n: int) -> table_pb2.RevealResponse:
    request = table_pb2.DealRequest(table_id=table, request_id=f"{table}-{n}")
    dealt = retrying(lambda: side.tables.Deal(request))
    for player, cards in hands_of(dealt).items():
        arrange(side, dealt.round_id, player, cards)
    revealed = table_pb2.RevealRequest(round_id=dealt.round_id)
    return retrying(lambda: side.tables.Reveal(revealed))


def settlements(side: Side, player: str) -> list[tuple[str, int]]:
    request = results_pb2.ListLedgerEntriesRequest(player_id=player, page_size=100)
    entries = side.results.ListLedgerEntries(request).entries
    return [(e.round_id, e.amount) for e in entries if e.kind == "settlement"]


def settled(side: Side, player: str, count: int) -> list[tuple[str, int]]:
    """The player's settlements, once the views hold at least ``count`` of them."""

    def enough() -> list[tuple[str, int]] | None:
        found = settlements(side, player)
        return found if len(found) >= count else None

    return wait_until(enough, f"{player}'s {count} settlements")


def audit(environ: dict[str, str], tmp: Path) -> dict[str, object]:
    done = subprocess.run(
        [str(SCRIPT), "audit", "--all", "--json", "--data", str(tmp / "audit")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **environ},
    )
    report: dict[str, object] = json.loads(done.stdout)
    assert done.returncode == 0 and report["ok"], done.stdout + done.stderr
    return report


def test_an_owner_killed_mid_round_hands_its_tables_over(tmp_path: Path) -> None:
    """Issue 21, R10.3: the owner of two tables is killed (SIGKILL) with a round half arranged
    on one and a round left to its deadline on the other, both played through the other
    replica. The other serves the first table's calls within seconds (its client only retries
    UNAVAILABLE), reveals the overdue round once, and when the owner comes back the tables play
    on through it; every acknowledged command is there, and the audit passes."""
    with cluster(tmp_path) as replicas:
        owner_, other = replicas.start("a"), replicas.start("b")
        via = Side(other)
        tables = replicas.owned_by(owner_, "k")
        table, late = next(tables), next(tables)
        players = seat(via, table)
        late_players = seat(via, late, arrange_seconds=3)
        dealt = via.tables.Deal(table_pb2.DealRequest(table_id=table, request_id="r1"))
        overdue = via.tables.Deal(table_pb2.DealRequest(table_id=late, request_id="r1"))
        hands = hands_of(dealt)
        for player in players[:2]:
            arrange(via, dealt.round_id, player, hands[player])
        owner_.process.kill()
        owner_.process.wait(timeout=10)
        for player in players[2:]:
            arrange(via, dealt.round_id, player, hands[player])  # retried until it lands
        reveal = table_pb2.RevealRequest(round_id=dealt.round_id)
        revealed = retrying(lambda: via.tables.Reveal(reveal))
        assert sum(p.coins for p in revealed.players) == 0
        view = table_pb2.GetRoundRequest(round_id=overdue.round_id)
        wait_until(
            lambda: via.tables.GetRound(view).phase == table_pb2.ROUND_PHASE_REVEALED,
            "the overdue round to be revealed by the replica left",
            timeout=60,
        )
        back = replicas.start("a")  # the same store, a new port: the peers file says so
        replicas.publish()
        rounds = [play(Side(r), table, n) for n, r in enumerate([back, other, back, other])]
        assert all(sum(p.coins for p in r.players) == 0 for r in rounds)
        for player in late_players:  # one settlement, of the overdue round, and no other
            found = settled(via, player, 1)
            assert [r for r, _ in found] == [overdue.round_id]
        for player in players:
            expected = [dealt.round_id] + [r.round_id for r in rounds]
            found = settled(Side(back), player, 5)
            assert [r for r, _ in found] == expected
            coins = sum(a for _, a in found)
            got = via.wallets.GetBalance(wallet_pb2.GetBalanceRequest(player_id=player))
            assert got.balance == START + coins
        audit(replicas.environ, tmp_path)


def test_a_replica_added_while_tables_play_takes_its_share(tmp_path: Path) -> None:
    """Issue 21: tables play through one replica while a second starts and is added to the
    peers file; the tables it now owns move to it mid-game (some calls in flight land on the
    old owner): no client sees an error other than a retried UNAVAILABLE, every round sums to
    zero, each table's rounds are settled once each, and the audit passes."""
    with cluster(tmp_path) as replicas:
        first = replicas.start("a")
        sides = [Side(first)]
        tables = [f"g{t}" for t in range(6)]
        seated = {t: seat(sides[0], t) for t in tables}
        played: dict[str, list[table_pb2.RevealResponse]] = {t: [] for t in tables}

        def play_on(table: str, rounds: range) -> None:
            for n in rounds:
                played[table].append(play(sides[n % len(sides)], table, n))

        with ThreadPoolExecutor(len(tables)) as pool:
            first_half = [pool.submit(play_on, t, range(0, 3)) for t in tables]
            second = replicas.start("b")  # published while the tables play
            sides.append(Side(second))
            for future in first_half:
                future.result()
            for future in [pool.submit(play_on, t, range(3, 6)) for t in tables]:
                future.result()
        live = [r.address for r in replicas.running()]
        if any(owner(table, live) == second.address for table in tables):
            moved = [line for line in second.lines if '"forwarded_by"' in line]
            assert moved, "the new replica served no call passed to it"
        for table in tables:
            assert len(played[table]) == 6
            assert all(sum(p.coins for p in r.players) == 0 for r in played[table])
            for player in seated[table]:
                found = settled(sides[1], player, 6)
                assert [r for r, _ in found] == [r.round_id for r in played[table]]
        audit(replicas.environ, tmp_path)


def test_forged_forwarding_headers_are_refused_and_nothing_is_stored(tmp_path: Path) -> None:
    """Issue 21: on a server without a policy, a caller that claims to forward a call on behalf
    of a named identity (to have the record name it) is refused PERMISSION_DENIED, and so is a
    call naming only one of the two headers; one on behalf of ``anonymous`` (what every caller
    there is) is served as its own, and not passed on again."""
    with cluster(tmp_path) as replicas:
        replica = replicas.start("a")
        side = Side(replica)
        request = table_pb2.OpenTableRequest(table_id="forged")
        for metadata in (
            (("x-thirteen-forwarded-by", "10.0.0.9:1"), (ON_BEHALF, b"boss")),
            (("x-thirteen-forwarded-by", "10.0.0.9:1"), (ON_BEHALF, "José".encode())),
            (("x-thirteen-forwarded-by", "10.0.0.9:1"), (ON_BEHALF, b"\xff\xfe")),
            (("x-thirteen-forwarded-by", "10.0.0.9:1"), (ON_BEHALF, b"thirteen:sweeper")),
            ((ON_BEHALF, b"anonymous"),),
            (("x-thirteen-forwarded-by", "10.0.0.9:1"),),
        ):
            try:
                side.tables.OpenTable(request, metadata=metadata)
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.PERMISSION_DENIED, error.details()
            else:
                raise AssertionError(f"{metadata} was served")
        missing = table_pb2.GetTableRequest(table_id="forged")
        try:
            side.tables.GetTable(missing)
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.NOT_FOUND
        honest = (
            ("x-thirteen-forwarded-by", "10.0.0.9:1"),
            (ON_BEHALF, b"anonymous"),
        )
        assert side.tables.OpenTable(request, metadata=honest).table_id == "forged"


SPIFFE = "spiffe://thirteen.test/"


def test_a_forwarded_caller_is_authorized_as_if_it_called_the_owner(tmp_path: Path) -> None:
    """Issue 21, issue 11: two replicas over mutual TLS, each showing the other a certificate
    with the role ``replica``. A call landing on the replica that does not own its table is
    refused exactly as the owner refuses it directly (a reader dealing, another dealer at the
    table), allowed for the table's dealer, and recorded as that dealer's; a caller without
    the role ``replica`` that claims to forward a call is refused, and so is a replica calling
    on its own behalf."""
    ca = Authority(tmp_path / "certs")
    server = ca.issue("server", server=True)
    roles = {
        "dealer": "dealer",
        "dealer2": "dealer",
        "reader": "reader",
        "cashier": "cashier",
        "replica": "replica",
    }
    issued = {n: ca.issue(n, uri=SPIFFE + n) for n in roles}
    jose = ca.issue("jose", cn="Dealer José")
    policy = tmp_path / "policy.toml"
    policy.write_text(
        "[identities]\n"
        + "".join(f'"{SPIFFE}{n}" = ["{r}"]\n' for n, r in roles.items())
        + '"Dealer José" = ["dealer"]\n',
        encoding="utf-8",
    )
    tls = (
        *("--tls-cert", str(server.cert), "--tls-key", str(server.key)),
        *("--client-ca", str(ca.ca), "--policy", str(policy), "--peer-ca", str(ca.ca)),
        *("--peer-cert", str(issued["replica"].cert), "--peer-key", str(issued["replica"].key)),
    )
    trust = ca.ca.read_bytes()
    with store_environ("postgres", tmp_path) as environ:
        replicas = Cluster(environ, tmp_path)
        try:
            a = Replica(environ, tmp_path / "a", "--peers-file", str(replicas.listing), *tls)
            b = Replica(environ, tmp_path / "b", "--peers-file", str(replicas.listing), *tls)
            replicas.replicas += [a, b]
            replicas.publish()
            table = next(replicas.owned_by(a, "tls"))

            def stub(replica: Replica, name: str) -> table_pb2_grpc.TableServiceStub:
                credentials = grpc.ssl_channel_credentials(trust, *issued[name].pair())
                channel = grpc.secure_channel(replica.address, credentials)
                return table_pb2_grpc.TableServiceStub(channel)

            stub(b, "dealer").OpenTable(table_pb2.OpenTableRequest(table_id=table))
            deal = table_pb2.DealRequest(table_id=table)
            for name in ("reader", "dealer2", "replica"):
                direct, passed = refusal(stub(a, name), deal), refusal(stub(b, name), deal)
                assert direct == passed and direct[0] == grpc.StatusCode.PERMISSION_DENIED
            forged = (("x-thirteen-forwarded-by", b.address), SPIFFE_ON_BEHALF)
            code, details = refusal(stub(a, "reader"), deal, forged)
            assert code == grpc.StatusCode.PERMISSION_DENIED and "replica" in details
            credentials = grpc.ssl_channel_credentials(trust, *issued["cashier"].pair())
            cashier = wallet_pb2_grpc.WalletServiceStub(grpc.secure_channel(b.address, credentials))
            credit = wallet_pb2.CreditRequest(player_id="p1", amount=500, transfer_id="in-p1")
            cashier.Credit(credit)  # a wallet command: served where it lands
            seated = stub(b, "dealer").SitDown(
                table_pb2.SitDownRequest(table_id=table, player_id="p1")
            )
            assert [s.player_id for s in seated.seats] == ["p1"]
            # An identity beyond ASCII, as a certificate may hold, passes on unchanged.
            credentials = grpc.ssl_channel_credentials(trust, *jose.pair())
            as_jose = table_pb2_grpc.TableServiceStub(grpc.secure_channel(b.address, credentials))
            other = next(t for t in replicas.owned_by(a, "jose"))
            opened = as_jose.OpenTable(table_pb2.OpenTableRequest(table_id=other), timeout=30)
            assert opened.table_id == other
            assert [line for line in a.lines if '"forwarded_by"' in line]
        finally:
            replicas.stop()


SPIFFE_ON_BEHALF = (ON_BEHALF, (SPIFFE + "dealer").encode())


def refusal(
    stub: table_pb2_grpc.TableServiceStub,
    request: table_pb2.DealRequest,
    metadata: tuple[tuple[str, str | bytes], ...] = (),
) -> tuple[grpc.StatusCode, str]:
    try:
        stub.Deal(request, metadata=metadata, timeout=30)
    except grpc.RpcError as error:
        return error.code(), error.details() or ""
    raise AssertionError("served")


def request_id_in(trailing: Any) -> str | None:
    """The ``x-request-id`` a call's trailing metadata carries."""
    return next((value for key, value in trailing or () if key == "x-request-id"), None)


def scrape(replica: Replica) -> dict[tuple[str, str], float]:
    """``thirteen_rpc_requests_total`` of ``replica`` by (method, code)."""
    line = next(x for x in replica.lines if "serving metrics on" in x)
    url = line.split("serving metrics on ")[1].split()[0]
    with urllib.request.urlopen(url, timeout=30) as answer:
        text = answer.read().decode()
    counted: dict[tuple[str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "thirteen_rpc_requests_total":
                key = (sample.labels["method"], sample.labels["code"])
                counted[key] = counted.get(key, 0.0) + sample.value
    return counted


def test_a_passed_on_call_is_counted_once_where_it_was_served(tmp_path: Path) -> None:
    """Issue 21: calls for a table the other replica owns are counted by the owner, which
    served them, with its code (OK, or its refusal), and not again by the replica they landed
    on; the caller gets the request id to find them by in the owner's log."""
    with cluster(tmp_path) as replicas:
        flags = ("--peers-file", str(replicas.listing), "--metrics", "127.0.0.1:0")
        owner_ = Replica(replicas.environ, tmp_path / "a", *flags)
        landing = Replica(replicas.environ, tmp_path / "b", *flags)
        replicas.replicas += [owner_, landing]
        replicas.publish()
        table = next(replicas.owned_by(owner_, "m"))
        via = Side(landing)
        via.tables.OpenTable(table_pb2.OpenTableRequest(table_id=table))
        for n in range(3):
            try:  # no such player: the owner refuses, the landing replica answers the same
                via.tables.SitDown(table_pb2.SitDownRequest(table_id=table, player_id=f"x{n}"))
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.NOT_FOUND
        landed, served = scrape(landing), scrape(owner_)
        assert served.get(("OpenTable", "OK")) == 1
        assert served.get(("SitDown", "NOT_FOUND")) == 3
        assert not any(method in ("OpenTable", "SitDown") for method, _ in landed)
        other = next(replicas.owned_by(owner_, "n"))
        opened = table_pb2.OpenTableRequest(table_id=other)
        _, call = via.tables.OpenTable.with_call(opened, metadata=(("x-request-id", "mine-1"),))
        assert request_id_in(call.trailing_metadata()) == "mine-1"
        owners = [v for k, v in call.trailing_metadata() or () if k == "x-thirteen-owner"]
        assert owners == [owner_.address]  # a hint for a client that would call it directly
        stranger = table_pb2.SitDownRequest(table_id=other, player_id="nobody")
        try:
            via.tables.SitDown(stranger, metadata=(("x-request-id", "mine-2"),))
        except grpc.RpcError as error:
            assert error.code() == grpc.StatusCode.NOT_FOUND
            assert request_id_in(error.trailing_metadata()) == "mine-2"
        else:
            raise AssertionError("a stranger sat down")


def test_a_hung_owner_loses_its_tables_until_it_answers_again(tmp_path: Path) -> None:
    """Issue 21: the owner stopped (SIGSTOP: alive, silent) with a round dealt. A call passed to
    it ends at the caller's deadline; within seconds its health checks fail and the other replica
    serves the table itself; when the owner resumes (SIGCONT) it takes the table back, and the
    round it was holding plays on from what the store says, every round summing to zero."""
    with cluster(tmp_path) as replicas:
        owner_, other = replicas.start("a"), replicas.start("b")
        via = Side(other)
        table = next(replicas.owned_by(owner_, "h"))
        players = seat(via, table)
        dealt = via.tables.Deal(table_pb2.DealRequest(table_id=table, request_id="h1"))
        hands = hands_of(dealt)
        owner_.process.send_signal(signal.SIGSTOP)
        try:
            front, middle, back = good_piles(hands[players[0]])
            request = table_pb2.ArrangeRequest(
                round_id=dealt.round_id, player_id=players[0], front=front, middle=middle, back=back
            )
            try:
                via.tables.Arrange(request, timeout=2)
            except grpc.RpcError as error:  # passed to the silent owner: the deadline ends it
                assert error.code() == grpc.StatusCode.DEADLINE_EXCEEDED, error.details()
            wait_until(lambda: other.live() == 1, "the silent owner to be counted down", 30)
            for player in players:  # served where they land now
                arrange(via, dealt.round_id, player, hands[player])
        finally:
            owner_.process.send_signal(signal.SIGCONT)
        wait_until(lambda: other.live() == 2, "the owner to be counted live again", 30)
        revealed = retrying(
            lambda: via.tables.Reveal(table_pb2.RevealRequest(round_id=dealt.round_id))
        )
        rounds = [revealed, play(Side(owner_), table, 2), play(via, table, 3)]
        assert all(sum(p.coins for p in r.players) == 0 for r in rounds)
        audit(replicas.environ, tmp_path)


def test_a_peer_of_another_store_is_never_handed_a_table(tmp_path: Path) -> None:
    """Issue 21: a replica of another schema listed by mistake answers its health checks but
    not for this store: it owns nothing (the warning says so once), and every table's calls are
    stored in the store they were sent to."""
    for each in ("one", "two"):
        (tmp_path / each).mkdir()
    with cluster(tmp_path / "one") as ours, store_environ("postgres", tmp_path / "two") as theirs:
        stranger = Replica(theirs, tmp_path / "two" / "data")
        try:
            mine = ours.start("a")
            ours.listing.write_text(f"{mine.address}\n{stranger.address}\n")
            wait_until(
                lambda: any("peer_serves_another_store" in line for line in mine.lines),
                "the warning about the peer of another store",
            )
            assert mine.live() == 1
            side = Side(mine)
            for n in range(8):  # some would be the stranger's if it counted
                side.tables.OpenTable(table_pb2.OpenTableRequest(table_id=f"s{n}"))
            for n in range(8):
                got = side.tables.GetTable(table_pb2.GetTableRequest(table_id=f"s{n}"))
                assert got.table_id == f"s{n}"
            try:
                Side(stranger).tables.GetTable(table_pb2.GetTableRequest(table_id="s0"))
            except grpc.RpcError as error:
                assert error.code() == grpc.StatusCode.NOT_FOUND
            else:
                raise AssertionError("a table reached the other store")
            warned = [line for line in mine.lines if "peer_serves_another_store" in line]
            assert len(warned) == 1
        finally:
            stranger.stop()
