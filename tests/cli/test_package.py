"""The package as a user gets it (issue 23, finding 3): a wheel and an sdist built from the files
of a clone, with no stubs generated, installed into a fresh virtual environment outside the
checkout; the installed ``thirteen serve`` serves and the installed ``thirteen demo`` plays
against it.

Offline: the wheel is built with this environment's setuptools and grpcio-tools, and the fresh
environment reads the dependencies from this environment's site-packages (a path in a ``.pth``
file, which runs none of that directory's own ``.pth`` files, so this checkout's editable
install stays out of sight); nothing is downloaded."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import threading
import zipfile
from pathlib import Path

import pytest

from tests.e2e.helpers import wait_until

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def _clone(to: Path) -> Path:
    """The files a clone of this checkout has (tracked and new, not ignored): no stubs."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (to / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, to / name)
    assert not (to / "service" / "_generated").exists()
    return to


def _build(source: Path, into: Path) -> tuple[Path, Path]:
    """The wheel and the sdist, built by setuptools' PEP 517 backend."""
    built = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from setuptools import build_meta as b; into = sys.argv[1]; "
            "print('built', b.build_wheel(into), b.build_sdist(into))",
            str(into),
        ],
        cwd=source,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    wheel, sdist = built.stdout.splitlines()[-1].split()[-2:]
    return into / wheel, into / sdist


def _venv(where: Path) -> Path:
    """A fresh environment whose imports fall back to this one's site-packages."""
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120
    )
    python = where / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def _install(python: Path, package: Path, cwd: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--no-build-isolation",
            str(package),
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]


def _installed(python: Path, cwd: Path) -> str:
    where = subprocess.run(
        [
            python,
            "-c",
            "import service._generated.thirteen.v1.table_pb2_grpc as m; print(m.__file__)",
        ],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )
    assert where.returncode == 0, where.stderr
    return where.stdout.strip()


def test_the_built_wheel_installs_a_thirteen_that_serves_and_plays_the_demo(
    tmp_path: Path,
) -> None:
    source = _clone(tmp_path / "clone")
    wheel, sdist = _build(source, tmp_path / "dist")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    assert "service/_generated/thirteen/v1/table_pb2_grpc.py" in names
    assert "service/_generated/thirteen.v1.binpb" in names
    assert any(name.endswith("licenses/LICENSE") for name in names)
    assert not any(name.startswith("tests/") for name in names)

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    python = _venv(tmp_path / "venv")
    _install(python, wheel, outside)
    assert _installed(python, outside).startswith(str(tmp_path / "venv"))
    script = python.parent / "thirteen"
    environ = {**os.environ, "THIRTEEN_STORE": "sqlite"}
    server = subprocess.Popen(
        [script, "serve", "--address", "127.0.0.1:0", "--data", outside / "data"],
        cwd=outside,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=environ,
    )
    lines: list[str] = []

    def read() -> None:
        assert server.stderr is not None
        lines.extend(server.stderr)

    threading.Thread(target=read, daemon=True).start()
    try:
        wait_until(
            lambda: any("serving gRPC on" in line for line in lines) or server.poll() is not None,
            "the installed thirteen serve to start",
            60,
        )
        started = next((line for line in lines if "serving gRPC on" in line), "")
        assert started, "".join(lines[-20:])
        address = started.split("serving gRPC on ")[1].split()[0]
        played = subprocess.run(
            [script, "demo", "--address", address, "--rounds", "1", "--seed", "wheel"],
            cwd=outside,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
            env={**environ, "NO_COLOR": "1"},
        )
        assert played.returncode == 0, played.stderr
        assert "settlement at base" in played.stdout
    finally:
        server.terminate()
        server.wait(timeout=30)

    # The sdist builds and installs too (its build generates the stubs here, without the
    # plugin that types the service stubs, which this fresh environment lacks).
    other = _venv(tmp_path / "venv-sdist")
    _install(other, sdist, outside)
    assert _installed(other, outside).startswith(str(tmp_path / "venv-sdist"))
    version = subprocess.run(
        [other.parent / "thirteen", "--version"], capture_output=True, text=True, check=False
    )
    assert version.stdout.strip() == "thirteen 0.1.0", version.stderr
