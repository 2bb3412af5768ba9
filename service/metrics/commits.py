"""What this process commits: the writer's batches (commands per transaction, the time each
commit took) and the rounds' counters, derived from the events in one place, the commit.

Each event is counted once, by the process whose writer committed it: the follower, the
sweeper, the streams and the projector see events too (and on PostgreSQL every replica sees
every replica's), but none of them counts. So a replica counts its own commits, a sum over
replicas counts each event once, and a restarted process starts again from 0 (Prometheus's
``rate`` and ``increase`` take a counter's reset in their stride); totals since the first
event are the views' business (``ResultsService``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from domain.round import Round
from domain.rules.specials import Special
from service.caller import CALLER_FIELD, SWEEPER

BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64)  # the writer commits at most 64 commands at once
COMMIT_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
SPECIALS = tuple(special.id for special in Special)  # R5.1: the ``special`` label's values
TRIGGERS = ("call", "deadline")  # who revealed: a caller, or the sweeper at the deadline


class Commits:
    """The commit's metrics, in ``registry``; ``batch`` is the writer's hook
    (``Writer.on_commit``) and ``committed`` a listener of the application's commits."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, help: str, labels: Sequence[str] = ()) -> Counter:
            return Counter(name, help, labels, registry=registry)

        self.batch_commands = Histogram(
            "thirteen_commit_batch_commands",
            "Commands run in each committed transaction of the writer (refused ones included).",
            buckets=BATCH_BUCKETS,
            registry=registry,
        )
        self.commit_duration = Histogram(
            "thirteen_commit_duration_seconds",
            "Seconds each committed transaction took: encoding, chaining, storing, durable.",
            buckets=COMMIT_BUCKETS,
            registry=registry,
        )
        self.events = counter("thirteen_events_committed", "Events this process committed.")
        self.dealt = counter("thirteen_rounds_dealt", "Rounds dealt (R10.1).")
        self.revealed = counter(
            "thirteen_rounds_revealed",
            "Rounds revealed (R10.3): by a call, or by the sweeper at the deadline.",
            ["trigger"],
        )
        self.abandoned = counter(
            "thirteen_rounds_abandoned",
            "Rounds ended without a showdown: escapes left fewer than two players (R11.3).",
        )
        self.fouls = counter(
            "thirteen_fouls",
            "Players foul at a showdown (R4.3): a foul arrangement or none, counted at the reveal.",
        )
        self.escapes = counter("thirteen_escapes", "Players who left a dealt round (R11).")
        self.specials = counter(
            "thirteen_specials_declared",
            "Special hands declared (R5.4) that stood at a showdown, by special, counted at the "
            "reveal.",
            ["special"],
        )
        self.coins_settled = counter(
            "thirteen_coins_settled",
            "Coins the winners of revealed rounds received in settlement (R9).",
        )
        for special in SPECIALS:  # a bounded set: every series exists from the start
            self.specials.labels(special)
        for trigger in TRIGGERS:
            self.revealed.labels(trigger)

    def batch(self, commands: int, seconds: float) -> None:
        """A transaction of ``commands`` commands committed in ``seconds``."""
        self.batch_commands.observe(commands)
        self.commit_duration.observe(seconds)

    def committed(self, recordings: Sequence[Any]) -> None:
        """The events of one commit (the library's recordings), now durable."""
        self.events.inc(len(recordings))
        self.count(r.domain_event for r in recordings)

    def count(self, events: Iterable[Any]) -> None:
        """Count the rounds' events among ``events``. Specials are counted at the reveal, not
        at the declaration: a series that moved when a player declared would show, before
        the reveal, which special a player at a watched table holds."""
        for event in events:
            if isinstance(event, Round.Dealt):
                self.dealt.inc()
            elif isinstance(event, Round.Revealed):
                self._revealed(event)
            elif isinstance(event, Round.PlayerEscaped):
                self.escapes.inc()
            elif isinstance(event, Round.Abandoned):
                self.abandoned.inc()

    def _revealed(self, event: Round.Revealed) -> None:
        by_sweeper = getattr(event, CALLER_FIELD, None) == SWEEPER.identity
        self.revealed.labels("deadline" if by_sweeper else "call").inc()
        players = event.result["players"] if event.result is not None else []
        for player in players:
            if player["foul_reason"] is not None:
                self.fouls.inc()
            if player["special"] in SPECIALS:
                self.specials.labels(player["special"]).inc()
        self.coins_settled.inc(sum(coins for coins in event.coins.values() if coins > 0))
