"""``thirteen serve --tiles HOST:PORT`` (issue 24): an address the tiles cannot be served on is
one line before the store is opened (exit status 2 when it is not HOST:PORT, 1 when it is taken
or not this machine's), as for ``--metrics``; the flag is also a setting
(``THIRTEEN_SERVE_TILES``)."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

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


def test_a_banner_line_is_one_write_so_no_log_line_lands_inside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``print`` writes a line's text and its end in two writes: a JSON log line another thread
    wrote between them once ended up inside the tiles' banner, and the address read from it
    was broken (a full run under load). Each banner is now one write."""
    from service.entrypoints.starting import say

    writes: list[str] = []

    class Recording:
        def write(self, text: str) -> int:
            writes.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    monkeypatch.setattr(sys, "stderr", Recording())
    say("thirteen: serving the log's tiles on http://127.0.0.1:1/")
    assert writes == ["thirteen: serving the log's tiles on http://127.0.0.1:1/\n"]
