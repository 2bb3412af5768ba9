"""``thirteen serve``'s replica flags (issue 21) refuse what cannot route, with one line and exit
status 2, before the store is opened: peers on SQLite (served by one process), a flag that needs
a peer list without one, an entry that is not HOST:PORT, a peers file that cannot be read, an
address on every interface with nothing to advertise, and TLS replicas without the credentials
to call each other."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_serve_refuses import one_line_refusal
from tests.support.certs import Authority
from tests.support.cli import thirteen

POSTGRES = {"THIRTEEN_STORE": "postgres", "POSTGRES_PORT": "1"}  # refused before connecting


def serve(tmp_path: Path, *flags: str, env: dict[str, str] | None = None) -> str:
    done = thirteen(
        "serve", "--address", "127.0.0.1:0", "--data", str(tmp_path / "data"), *flags, env=env
    )
    line = one_line_refusal(done)
    assert not (tmp_path / "data").exists()  # refused before the store is opened
    return line


@pytest.mark.parametrize(
    ("flags", "env", "said"),
    [
        (("--peers", "127.0.0.1:1"), None, "--peers needs the PostgreSQL store"),
        (("--advertise", "10.0.0.1:5"), POSTGRES, "--advertise needs --peers or --peers-file"),
        (("--peer-ca", "ca.pem"), POSTGRES, "--peer-ca needs --peers or --peers-file"),
        (("--peers", "10.0.0.1"), POSTGRES, "'10.0.0.1' is not HOST:PORT"),
        (("--peers", "a:1,b:99999"), POSTGRES, "'b:99999' is not HOST:PORT"),
        (("--peers", " , "), POSTGRES, "--peers lists no replica"),
        (("--peers-file", "/nonexistent/peers"), POSTGRES, "the peers file"),
    ],
)
def test_replica_flags_that_cannot_route_are_refused(
    tmp_path: Path, flags: tuple[str, ...], env: dict[str, str] | None, said: str
) -> None:
    assert said in serve(tmp_path, *flags, env=env)


def test_a_peers_file_with_a_bad_entry_names_it(tmp_path: Path) -> None:
    listing = tmp_path / "peers"
    listing.write_text("127.0.0.1:7001\n# a comment\nnot-an-address\n")
    line = serve(tmp_path, "--peers-file", str(listing), env=POSTGRES)
    assert f"{listing}: 'not-an-address' is not HOST:PORT" in line


def test_every_interface_needs_an_advertised_address(tmp_path: Path) -> None:
    done = thirteen(
        "serve",
        *("--address", "0.0.0.0:0", "--insecure", "--data", str(tmp_path / "data")),
        *("--peers", "10.0.0.1:5,10.0.0.2:5"),
        env=POSTGRES,
    )
    assert "give --advertise HOST:PORT" in one_line_refusal(done)


def test_tls_replicas_need_the_credentials_to_call_each_other(tmp_path: Path) -> None:
    ca = Authority(tmp_path / "certs")
    server = ca.issue("server", server=True)
    tls = ("--tls-cert", str(server.cert), "--tls-key", str(server.key))
    peers = ("--peers", "127.0.0.1:7001,127.0.0.1:7002")
    assert "give --peer-ca" in serve(tmp_path, *tls, *peers, env=POSTGRES)
    mutual = (*tls, "--client-ca", str(ca.ca), "--peer-ca", str(ca.ca))
    assert "give --peer-cert and --peer-key" in serve(tmp_path, *mutual, *peers, env=POSTGRES)
    plain = ("--peer-ca", str(ca.ca))
    assert "--peer-ca is for replicas serving TLS" in serve(tmp_path, *plain, *peers, env=POSTGRES)
