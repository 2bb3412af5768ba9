"""``thirteen serve --tiles HOST:PORT`` (issue 24): an address the tiles cannot be served on is
one line before the store is opened (exit status 2 when it is not HOST:PORT, 1 when it is taken
or not this machine's), as for ``--metrics``; the flag is also a setting
(``THIRTEEN_SERVE_TILES``)."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.cli.test_serve_metrics import serve
from tests.cli.test_serve_refuses import one_line_refusal


def test_a_tiles_address_that_is_not_host_and_port_is_refused(tmp_path: Path) -> None:
    line = one_line_refusal(serve(tmp_path / "data", "--tiles", "8080"))
    assert "--tiles" in line and "HOST:PORT" in line
    assert not (tmp_path / "data").exists()


def test_a_taken_tiles_port_is_refused_with_status_1_before_the_store_is_opened(
    tmp_path: Path,
) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = serve(tmp_path / "data", "--metrics", "127.0.0.1:0", "--tiles", f"127.0.0.1:{port}")
        line = one_line_refusal(done, status=1)
    assert (
        line
        == f"thirteen serve: cannot listen for tiles on 127.0.0.1:{port}: Address already in use"
    )
    assert not (tmp_path / "data").exists()
