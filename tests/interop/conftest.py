"""Fixtures: the Go verifier built from ``tests/interop/verifier`` against Debian's
golang.org/x/mod sources, offline; the stores the e2e tests use."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from tests.support.stores import store_environ

SOURCE = Path(__file__).parent / "verifier"
GOPATHS = ("/usr/share/gocode",)  # Debian's golang-golang-x-mod-dev puts its sources there
X_MOD = Path("src/golang.org/x/mod/sumdb")


def _unavailable(reason: str) -> NoReturn:
    """Skip with the reason, or fail under ``THIRTEEN_REQUIRE_GO=1`` (make interop-check)."""
    if os.environ.get("THIRTEEN_REQUIRE_GO") == "1":
        pytest.fail(f"THIRTEEN_REQUIRE_GO=1 but {reason}")
    pytest.skip(reason)


def gopath() -> str | None:
    """The first GOPATH (``$GOPATH``'s, then Debian's) holding golang.org/x/mod's sumdb."""
    candidates = [*os.environ.get("GOPATH", "").split(os.pathsep), *GOPATHS]
    for candidate in filter(None, candidates):
        if all((Path(candidate) / X_MOD / package).is_dir() for package in ("note", "tlog")):
            return candidate
    return None


@pytest.fixture(scope="session")
def go_verifier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The verifier, built in GOPATH mode without the network, in a build cache of its own."""
    go = shutil.which("go")
    if go is None:
        _unavailable("go is not installed (make interop-check installs Debian's golang-go)")
    path = gopath()
    if path is None:
        _unavailable(
            "golang.org/x/mod's sources are not in GOPATH or /usr/share/gocode (make "
            "interop-check installs Debian's golang-golang-x-mod-dev)"
        )
    built = tmp_path_factory.mktemp("go")
    environ = {
        **os.environ,
        "GO111MODULE": "off",
        "GOPATH": str(path),
        "GOCACHE": str(built / "cache"),
        "GOFLAGS": "",
        "GOPROXY": "off",
        "CGO_ENABLED": "0",
    }
    binary = built / "verifier"
    done = subprocess.run(
        [str(go), "build", "-o", str(binary), "."],
        cwd=SOURCE,
        env=environ,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, f"go build failed:\n{done.stdout}{done.stderr}"
    return binary


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    with store_environ(request.param, tmp_path) as environ:
        yield environ
