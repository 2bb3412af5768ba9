"""The log follower and the deadline sweeper it feeds, as a serving process starts them
(``service.bootstrap.serving``)."""

from __future__ import annotations

from projections.store import ResumePoint
from service.application import Thirteen
from service.eventstore.follower import LogFollower
from service.rpc.watch import TABLE_AND_ROUND_TOPICS, WatchHub
from service.sweeper import SWEEPER_TOPICS, DeadlineSweeper


def followers(
    app: Thirteen,
    hub: WatchHub,
    resume: ResumePoint | None,
    sweep_interval: float,
    poll_interval: float,
) -> tuple[LogFollower, DeadlineSweeper]:
    """The log follower and the deadline sweeper it feeds (with the table streams). They read
    only table and round events, from where the views are (with the rounds open there), so
    start-up does not read the whole log; views of an earlier version know no open rounds, and
    then the log is read from its start."""

    def topics() -> frozenset[str]:
        """Every table and round event while a stream is open here, else only the few that
        the sweeper (and the routing's round → table cache) read: another replica's events are
        then mostly not decoded at all."""
        return TABLE_AND_ROUND_TOPICS if hub.watching() else SWEEPER_TOPICS

    follower = LogFollower(
        app, start=resume.position if resume else 0, interval=poll_interval, topics=topics
    )
    sweeper = DeadlineSweeper(app, interval=sweep_interval)
    if resume is not None:
        sweeper.resume(resume.open_rounds)
    follower.listeners += [sweeper.on_event, hub.on_event]
    return follower, sweeper
