"""The pure parts of routing (issue 21): who owns a table, the peer list's syntax, and whose
word a forwarded call is taken on (``service.rpc.behalf``)."""

from __future__ import annotations

import contextvars
import random
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.errors import PermissionDenied
from service.routing.owners import owner
from service.routing.peers import Peers, PeersError, parse_peers
from service.rpc import behalf
from service.rpc.behalf import FORWARDED, ON_BEHALF, caller_identity, forwarded_by
from service.security.policy import Policy


@pytest.fixture(autouse=True)
def _no_mark_left_behind() -> Iterator[None]:
    """``caller_identity`` marks the context it runs in as a forwarded call's: these tests call
    it outside any call, so the marks are undone after each, before a later test (or a server
    started later in this process) could inherit them."""
    forwarded = behalf._forwarded_by.set(None)
    passed = behalf._passed_on.set(False)
    yield
    behalf._forwarded_by.reset(forwarded)
    behalf._passed_on.reset(passed)


REPLICAS = st.lists(
    st.from_regex(r"10\.0\.0\.[0-9]{1,3}:[1-9][0-9]{0,3}", fullmatch=True),
    min_size=1,
    max_size=8,
    unique=True,
)


@given(REPLICAS, st.text(min_size=1, max_size=20), st.randoms())
def test_every_replica_computes_the_same_owner(
    replicas: list[str], table: str, order: random.Random
) -> None:
    """Whatever order a replica lists the others in, it names the same owner, one of them."""
    shuffled = list(replicas)
    order.shuffle(shuffled)
    assert owner(table, replicas) == owner(table, shuffled) in replicas


@given(REPLICAS, st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=30))
def test_a_replica_leaving_moves_only_its_own_tables(
    replicas: list[str], tables: list[str]
) -> None:
    """Rendezvous hashing: when one replica goes, the tables of the others stay where they were."""
    gone, *left = replicas
    for table in tables:
        before = owner(table, replicas)
        if before != gone:
            assert owner(table, left) == before


def test_a_peer_list_is_host_port_entries_by_comma_or_line() -> None:
    text = "10.0.0.1:50051, 10.0.0.2:50051\n# the third\n[::1]:7000  # v6\n10.0.0.1:50051\n"
    assert parse_peers(text, "f") == ("10.0.0.1:50051", "10.0.0.2:50051", "[::1]:7000")
    for bad in ("10.0.0.1", ":80", "host:0", "host:65536", "host:http"):
        with pytest.raises(PeersError, match="is not HOST:PORT"):
            parse_peers(bad, "f")
    with pytest.raises(PeersError, match="at most 64"):
        parse_peers(",".join(f"h:{p}" for p in range(1, 66)), "f")


POLICY = Policy.parse('[identities]\n"r" = ["replica"]\n"d" = ["dealer"]\n"a" = ["admin"]\n')


def forwarded(by: str, on_behalf: str) -> list[tuple[str, str | bytes]]:
    return [(FORWARDED, by), (ON_BEHALF, on_behalf.encode())]


def test_a_call_without_the_headers_is_its_transport_s() -> None:
    assert caller_identity(POLICY, "d", [("x-request-id", "1")]) == "d"
    assert caller_identity(POLICY, None, None) is None


def test_a_forwarded_call_is_marked_for_the_metrics_and_the_log() -> None:
    marked = contextvars.copy_context()
    marked.run(caller_identity, POLICY, "r", forwarded(by="10.0.0.1:1", on_behalf="d"))
    assert marked.run(forwarded_by) == "10.0.0.1:1"
    assert contextvars.Context().run(forwarded_by) is None  # a call made here


def test_only_a_replica_speaks_for_another_caller() -> None:
    assert caller_identity(POLICY, "r", forwarded(by="10.0.0.1:1", on_behalf="d")) == "d"
    assert caller_identity(POLICY, "r", forwarded(by="10.0.0.1:1", on_behalf="anonymous")) is None
    assert caller_identity(POLICY, "r", forwarded(by="x:1", on_behalf="Dealer José")) == (
        "Dealer José"
    )  # any identity a certificate may hold passes, UTF-8 in a binary header
    for forged in ("thirteen:sweeper", "", "x" * 513, "tab\there"):
        with pytest.raises(PermissionDenied, match="names no identity"):
            caller_identity(POLICY, "r", forwarded(by="x:1", on_behalf=forged))
    with pytest.raises(PermissionDenied, match="not UTF-8"):
        caller_identity(POLICY, "r", [(FORWARDED, "x:1"), (ON_BEHALF, b"\xff")])
    for transport in ("d", "a", None):  # a dealer, an admin, no certificate: not a replica
        with pytest.raises(PermissionDenied, match="only a replica"):
            caller_identity(POLICY, transport, forwarded(by="x:1", on_behalf="d"))
    for half in ([(FORWARDED, "x:1")], [(ON_BEHALF, b"d")]):
        with pytest.raises(PermissionDenied, match="names both"):
            caller_identity(POLICY, "r", half)


def test_without_a_policy_a_forwarded_call_can_only_be_anonymous() -> None:
    open_ = Policy.everyone_admin()
    assert caller_identity(open_, None, forwarded(by="x:1", on_behalf="anonymous")) is None
    with pytest.raises(PermissionDenied, match="can only be anonymous"):
        caller_identity(open_, None, forwarded(by="x:1", on_behalf="spiffe://x/boss"))
    with pytest.raises(PermissionDenied, match="can only be anonymous"):
        caller_identity(open_, "cert-holder", forwarded(by="x:1", on_behalf="anonymous"))


@given(REPLICAS, st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=30))
def test_a_remembered_owner_is_the_owner_of_the_live_set_now(
    replicas: list[str], tables: list[str]
) -> None:
    """``Peers.owner`` remembers owners, but only for the live set it found them in: after a
    replica leaves, every table is owned as rendezvous hashing over those left says."""
    me, *others = replicas
    peers = Peers(lambda: replicas)
    peers.bind(me)
    peers._failures = dict.fromkeys(others, 0)  # as a first check that found them all
    peers._publish()
    for table in tables:
        assert peers.owner(table) == owner(table, replicas)
    for gone in others:
        peers.unreachable(gone)
        left = peers.live()
        for table in tables:
            assert peers.owner(table) == owner(table, left)
            assert peers.owns(table) == (owner(table, left) == me)
