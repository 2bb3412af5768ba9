"""Attack (issue 11, absurd values): every file ``thirteen serve`` reads at start (the seed key,
the TLS certificate, its key, the client CA, the policy) is read whole, with no bound. Given a
file that never ends (``/dev/zero``: a wrong path in a unit file, a device, a huge file) the
server reads until memory runs out: here, under a 1.5 GB address-space limit so that the test
cannot take the machine down, a ``MemoryError`` traceback and exit status 1; without the limit,
every byte of memory the machine has.

The README promises one line naming the file and exit status 2 for a file that is not PEM, not
TOML, not hex or of the wrong length. A file far larger than any key, certificate or policy
could be (or one that is not a regular file) should be refused that way too, at once."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.certs import Authority

SCRIPT = Path(sys.executable).parent / "thirteen"
ENDLESS = "/dev/zero"
MEMORY = 1536 * 1024 * 1024  # bytes of address space: a normal start needs well under 1 GB


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY, MEMORY))


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    ca = Authority(tmp_path_factory.mktemp("endless") / "certs")
    server = ca.issue("server", server=True)
    policy = ca.directory / "policy.toml"
    policy.write_text('[identities]\n"spiffe://t/admin" = ["admin"]\n', encoding="utf-8")
    return {
        "cert": str(server.cert),
        "key": str(server.key),
        "ca": str(ca.ca),
        "policy": str(policy),
    }


CASES: dict[str, Callable[[dict[str, str]], list[str]]] = {
    "seed key": lambda f: ["--seed-key", ENDLESS],
    "certificate": lambda f: ["--tls-cert", ENDLESS, "--tls-key", f["key"]],
    "private key": lambda f: ["--tls-cert", f["cert"], "--tls-key", ENDLESS],
    "client CA": lambda f: ["--tls-cert", f["cert"], "--tls-key", f["key"], "--client-ca", ENDLESS],
    "policy": lambda f: [
        *("--tls-cert", f["cert"], "--tls-key", f["key"], "--client-ca", f["ca"]),
        *("--policy", ENDLESS),
    ],
}


@pytest.mark.skipif(not os.path.exists(ENDLESS), reason="needs /dev/zero")
@pytest.mark.parametrize("what", list(CASES))
def test_a_file_that_never_ends_is_refused_in_one_line(
    tmp_path: Path, tls: dict[str, str], what: str
) -> None:
    args = CASES[what](tls)
    try:
        done = subprocess.run(
            [
                str(SCRIPT),
                "serve",
                "--address",
                "127.0.0.1:0",
                "--data",
                str(tmp_path / "d"),
                *args,
            ],
            capture_output=True,
            text=True,
            timeout=20,
            env={**os.environ, "THIRTEEN_STORE": "sqlite"},
            preexec_fn=_limit_memory,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{what}: serve neither refused nor failed within 20 s")
    assert "Traceback" not in done.stderr, done.stderr[-600:]
    assert done.returncode == 2, done.stderr[-600:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and ENDLESS in lines[0], done.stderr[-600:]
