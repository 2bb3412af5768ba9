"""Seeds, figures and failures of a simulation run."""

from __future__ import annotations

import os
import random
import threading
from collections import Counter
from dataclasses import dataclass, field

SEED_VARIABLE = "THIRTEEN_SIM_SEED"
SHRINK_VARIABLE = "THIRTEEN_SIM_SHRINK"


def choose_seed() -> int:
    """``THIRTEEN_SIM_SEED`` when set (a replay), else a fresh seed."""
    text = os.environ.get(SEED_VARIABLE, "").strip()
    if text:
        return int(text)
    return random.SystemRandom().randrange(1, 2**31)


def replay_hint(seed: int, where: str) -> str:
    """The command that replays ``seed``: ``where`` is a pytest selection, or a whole
    command (starting with ``.venv/``) for the soak."""
    if where.startswith(".venv/"):
        return f"replay: {where}"
    return f"replay: {SEED_VARIABLE}={seed} .venv/bin/python -m pytest {where}"


class Figures:
    """Counters of what a run did, safe to bump from any thread."""

    ORDER = (
        "rounds dealt",
        "rounds revealed",
        "rounds revealed at the deadline",
        "rounds abandoned",
        "escapes",
        "arrangements",
        "credits acknowledged",
        "debits acknowledged",
        "transfers refused",
        "restarts graceful",
        "restarts kill -9",
        "restarts crash (in process)",
        "clock jumps",
        "postgres sessions terminated",
        "retries",
        "deadlines fired",
        "answers UNAVAILABLE",
        "answers ABORTED",
        "answers INTERNAL",
        "outcomes unknown then resolved",
        "hostile calls refused",
        "invariants checked",
    )

    def __init__(self) -> None:
        self._counts: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            self._counts[name] += n

    def __getitem__(self, name: str) -> int:
        with self._lock:
            return self._counts[name]

    def merge(self, other: Figures) -> None:
        with self._lock, other._lock:
            self._counts.update(other._counts)

    def lines(self) -> list[str]:
        with self._lock:
            names = [n for n in self.ORDER] + sorted(set(self._counts) - set(self.ORDER))
            return [f"  {name:<34} {self._counts[name]:>7}" for name in names]


@dataclass
class Failure:
    invariant: str
    detail: str


@dataclass
class Failures:
    """Every broken invariant of a run; a run reports all of them, not just the first."""

    seed: int
    where: str
    items: list[Failure] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, invariant: str, detail: str) -> None:
        with self._lock:
            self.items.append(Failure(invariant, detail))

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self.items)

    def by_invariant(self) -> dict[str, list[str]]:
        grouped: dict[str, list[str]] = {}
        with self._lock:
            for item in self.items:
                grouped.setdefault(item.invariant, []).append(item.detail)
        return grouped

    def message(self, figures: Figures | None = None, examples: int = 6) -> str:
        lines = [f"simulation failed (seed {self.seed}; {replay_hint(self.seed, self.where)})"]
        for invariant, details in self.by_invariant().items():
            lines.append(f"- {invariant}: {len(details)} time(s)")
            lines += [f"    {d}" for d in details[:examples]]
            if len(details) > examples:
                lines.append(f"    … and {len(details) - examples} more")
        if figures is not None:
            lines.append("figures:")
            lines += figures.lines()
        return "\n".join(lines)

    def raise_if_any(self, figures: Figures | None = None) -> None:
        if self:
            raise AssertionError(self.message(figures))
