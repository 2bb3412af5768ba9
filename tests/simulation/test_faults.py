"""The concurrent fault simulation, short (``driver``, ``checks``):

- against a real ``thirteen serve``: restarted at every phase of a round (SIGTERM and
  ``kill -9``), killed at a random moment and, on PostgreSQL, its sessions cut;
- against the server in this process: crashes and graceful restarts at every phase, and clock
  jumps past the arrange deadline while tables play (``thirteen serve`` cannot fake time).

Both with tables playing while a bank tops players up and cashes them out.
``THIRTEEN_SIM_SEED=N`` replays a seed; ``make soak MINUTES=N`` runs the same for longer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.simulation.report import choose_seed
from tests.simulation.run import run_driver
from tests.support.stores import store_environ

SUBPROCESS_SECONDS = 8.0
IN_PROCESS_SECONDS = 5.0


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_real_server_survives_restarts_at_every_phase_kills_and_cut_sessions(
    kind: str, tmp_path: Path
) -> None:
    seed = choose_seed()
    print(f"simulation seed {seed} (THIRTEEN_SIM_SEED={seed} replays it)")
    with store_environ(kind, tmp_path) as environ:
        outcome = run_driver(
            kind,
            environ,
            tmp_path / "data",
            seed,
            SUBPROCESS_SECONDS,
            where=f"tests/simulation/test_faults.py -k 'real_server and {kind}'",
            calm=0.3,  # room for a restart at every phase, and a kill -9 at a random moment
        )
    print(outcome.summary("fault simulation (thirteen serve)"))
    outcome.failures.raise_if_any(outcome.figures)


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_play_in_process_survives_crashes_at_every_phase_and_clock_jumps(
    kind: str, tmp_path: Path
) -> None:
    seed = choose_seed()
    print(f"simulation seed {seed} (THIRTEEN_SIM_SEED={seed} replays it)")
    with store_environ(kind, tmp_path) as environ:
        outcome = run_driver(
            kind,
            environ,
            tmp_path / "data",
            seed,
            IN_PROCESS_SECONDS,
            where=f"tests/simulation/test_faults.py -k 'in_process and {kind}'",
            server="inprocess",
            # Mostly load: in process the server shares the interpreter with its clients, as
            # in the lead's report of ABORTED deals; the machine restarts at every phase.
            calm=0.6,
            every_restart=False,
        )
    print(outcome.summary("fault simulation (in process)"))
    outcome.failures.raise_if_any(outcome.figures)
