"""The state machine, short: a few seeded examples on each store (``machine``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.simulation.machine import run_machine
from tests.simulation.report import SHRINK_VARIABLE, choose_seed
from tests.support.stores import postgres_available

EXAMPLES = 3
STEPS = 30


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_one_command_at_a_time_with_restarts_clock_jumps_and_hostile_input(
    kind: str, tmp_path: Path
) -> None:
    if kind == "postgres" and (reason := postgres_available()) and os.environ.get("CI") != "true":
        pytest.skip(reason)
    seed = choose_seed()
    print(f"simulation seed {seed} (THIRTEEN_SIM_SEED={seed} replays it)")
    figures = run_machine(
        kind,
        seed,
        tmp_path,
        examples=EXAMPLES,
        steps=STEPS,
        where=f"tests/simulation/test_machine.py -k {kind}",
        shrink=os.environ.get(SHRINK_VARIABLE) == "1",
    )
    print(f"state machine on {kind}, seed {seed}: {EXAMPLES} examples")
    print("\n".join(figures.lines()))
