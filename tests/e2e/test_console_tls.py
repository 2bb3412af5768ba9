"""The dispute console in front of a service serving mutual TLS with a policy (issue 11): with
an auditor's certificate it shows rounds, with a reader's it shows players and tables and its
round pages are 403 naming the role it lacks, without a certificate the handshake fails (503).
An identity the policy gives both roles, as the README says to, sees everything; and a service
whose certificate names a DNS name is reached by IP with ``--tls-server-name``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from service.security.policy import Policy
from service.web.markup import link
from tests.support.certs import Authority, Issued
from tests.support.clock import ManualClock
from tests.support.console import Console, Played, play
from tests.support.server import ServerThread

SPIFFE = "spiffe://thirteen.dev/"
ROLES = ("admin", "auditor", "reader")
CONSOLE = "console"  # the identity the README's policy gives ["auditor", "reader"]
POLICY = (
    "[identities]\n"
    + "".join(f'"{SPIFFE}{r}" = ["{r}"]\n' for r in ROLES)
    + f'"{SPIFFE}{CONSOLE}" = ["auditor", "reader"]\n'
)


class World:
    def __init__(self, directory: Path) -> None:
        ca = Authority(directory / "certs")
        self.ca = ca.ca
        self.issued: dict[str, Issued] = {
            role: ca.issue(role, uri=SPIFFE + role, cn=role) for role in (*ROLES, CONSOLE)
        }
        key, cert = ca.issue("server", server=True).pair()
        trust = self.ca.read_bytes()
        self.server = ServerThread(
            directory / "data",
            {"THIRTEEN_STORE": "sqlite"},
            ManualClock(),
            credentials=grpc.ssl_server_credentials(
                [(key, cert)], root_certificates=trust, require_client_auth=True
            ),
            policy=Policy.parse(POLICY),
            channel_credentials=grpc.ssl_channel_credentials(trust, *self.issued["admin"].pair()),
        )
        self.played: Played = play(self.server)

    def console(self, role: str | None) -> Console:
        args = ["--ca", str(self.ca)]
        if role is not None:
            args += ["--cert", str(self.issued[role].cert), "--key", str(self.issued[role].key)]
        return Console(self.server.address, *args)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    built = World(tmp_path_factory.mktemp("console-tls"))
    yield built
    built.server.stop()


def test_with_an_auditor_s_certificate_the_console_shows_rounds_players_and_tables(
    world: World,
) -> None:
    console = world.console("auditor")
    try:
        assert "(mutual TLS)" in console.banner
        played = world.played
        shown = played.results[played.showdown]
        page = console.get(link("/rounds", played.showdown))
        assert page.status == 200, page.text
        assert shown.server_seed in page.text and "passes" in page.text
        assert "spiffe://thirteen.dev/admin" in page.text  # the caller recorded by the service
        export = console.get(link("/rounds", played.showdown, "export.json"))
        assert export.status == 200 and played.showdown in export.text
        player = console.get(link("/players", "bo"))
        assert player.status == 200
        assert "the balance needs one of the roles cashier, reader, admin" in player.text
        assert console.get(link("/tables", played.table)).status == 200
    finally:
        console.stop()


def test_with_a_reader_s_certificate_a_round_page_is_403_naming_the_auditor_role(
    world: World,
) -> None:
    console = world.console("reader")
    try:
        played = world.played
        page = console.get(link("/rounds", played.showdown))
        assert page.status == 403, page.text
        assert "lacks the role auditor (allowed: auditor, admin)" in page.text
        assert "ExportRound" in page.text
        zh = console.get(link("/rounds", played.showdown) + "?lang=zh")
        assert zh.status == 403 and "缺少角色 auditor" in zh.text
        player = console.get(link("/players", "bo"))
        assert player.status == 200 and "<b>" in player.text  # the reader sees the balance
        assert console.get(link("/tables", played.table)).status == 200
    finally:
        console.stop()


def test_without_a_client_certificate_the_handshake_fails_and_pages_say_503(world: World) -> None:
    console = world.console(None)
    try:
        assert "(TLS)" in console.banner
        page = console.get(link("/players", "bo"))
        assert page.status == 503
        assert "cannot reach the service" in page.text and "handshake" in page.text
    finally:
        console.stop()


def test_an_identity_with_both_roles_shows_round_pages_and_balances(world: World) -> None:
    """The README's policy for the console: ``["auditor", "reader"]``. An auditor alone cannot
    read balances, a reader alone cannot open round pages."""
    console = world.console(CONSOLE)
    try:
        played = world.played
        page = console.get(link("/rounds", played.showdown))
        assert page.status == 200, page.text
        assert played.results[played.showdown].server_seed in page.text
        player = console.get(link("/players", "bo"))
        assert player.status == 200
        assert "<b>" in player.text and "the balance needs" not in player.text
    finally:
        console.stop()


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ServerThread, Authority]]:
    """A service whose certificate names only ``thirteen.internal``, reached at 127.0.0.1."""
    directory = tmp_path_factory.mktemp("console-tls-name")
    ca = Authority(directory / "certs")
    key, cert = ca.issue("server", dns="thirteen.internal").pair()
    server = ServerThread(
        directory / "data",
        {"THIRTEEN_STORE": "sqlite"},
        ManualClock(),
        credentials=grpc.ssl_server_credentials(
            [(key, cert)], root_certificates=ca.ca.read_bytes(), require_client_auth=True
        ),
        policy=Policy.parse(POLICY),
    )
    yield server, ca
    server.stop()


@pytest.mark.parametrize("name", [None, "thirteen.internal"])
def test_tls_server_name_reaches_a_service_by_ip_whose_certificate_names_a_dns_name(
    named: tuple[ServerThread, Authority], name: str | None
) -> None:
    server, ca = named
    issued = ca.issue(CONSOLE, uri=SPIFFE + CONSOLE)
    args = ["--ca", str(ca.ca), "--cert", str(issued.cert), "--key", str(issued.key)]
    console = Console(server.address, *args, *(["--tls-server-name", name] if name else []))
    try:
        page = console.get(link("/players", "nobody"))
        if name is None:  # 127.0.0.1 is not a name the certificate holds
            assert page.status == 503 and "handshake" in page.text, page.text
        else:
            assert page.status == 404, page.text  # the service answered: no such player
            assert "nobody" in page.text
    finally:
        console.stop()
