"""Hidden information: who sees which hands and submissions of a round, in one place.
``GetRound``, ``WatchTable``, ``thirteen replay`` and ``thirteen explain`` all ask here.

Before the round is over (revealed or abandoned, R10.4) a player sees their own hand, with the
specials it qualifies for (R5.6), and what they submitted themselves, and nothing of anyone
else's: an observer sees no hand and no submission, only who has submitted; the server seed
stays secret (R12.1). The dealing game server (``DEALER``) sees every hand. Once the round is
over everything is public: the seed is published and anyone can recompute every hand (R12.6).

R10.4: before then, whoever may not see a player's submission learns only that it was made,
not its kind: an arrangement, a foul draft and a declared special look alike to them
(``tells_submission_kind``), in every message that reports one.

>>> from types import SimpleNamespace
>>> open_round = SimpleNamespace(ended=False, players=["A", "B"])
>>> visible_hands(open_round, "A"), visible_hands(open_round, OBSERVER)
(['A'], [])
>>> visible_hands(open_round, DEALER)
['A', 'B']
>>> viewpoint(open_round, "A"), viewpoint(open_round, "Z")
('A', '')
"""

from __future__ import annotations

from typing import Final, Protocol

OBSERVER: Final = ""
"""The viewer who is no player: sees only what is public."""
DEALER: Final = None
"""The game server that dealt the round (``Deal``'s answer): sees every hand."""


class Dealt(Protocol):
    """What visibility needs of a round (``domain.round.Round`` has it)."""

    @property
    def ended(self) -> bool: ...

    @property
    def players(self) -> list[str]: ...


def is_public(round_: Dealt) -> bool:
    """R10.4, R12.6: once the round is over, every hand and submission is public."""
    return round_.ended


def visible_hands(round_: Dealt, viewer: str | None) -> list[str]:
    """Whose hands ``viewer`` may see, in seat order: all once the round is over, else only
    their own (none for an observer); every hand for the ``DEALER``."""
    if viewer is DEALER or is_public(round_):
        return list(round_.players)
    return [viewer] if viewer in round_.players else []


def sees_submission(round_: Dealt, viewer: str | None, player: str) -> bool:
    """May ``viewer`` see what ``player`` submitted (piles, foul reason, declared special)?
    Everyone once the round is over; before, only the player and the ``DEALER``. Whether a
    player has submitted is public all along."""
    return viewer is DEALER or is_public(round_) or viewer == player


def tells_submission_kind(round_: Dealt, viewer: str | None, player: str) -> bool:
    """R10.4: may ``viewer`` learn what kind of submission ``player`` made (an arrangement, a
    foul draft or a declared special), and not only that one was made? Exactly those who may
    see the submission itself (``sees_submission``).

    >>> from types import SimpleNamespace
    >>> open_round = SimpleNamespace(ended=False, players=["A", "B"])
    >>> [tells_submission_kind(open_round, v, "A") for v in ("A", "B", OBSERVER, DEALER)]
    [True, False, False, True]
    """
    return sees_submission(round_, viewer, player)


def shows_undealt(round_: Dealt) -> bool:
    """R14.2.4: the cards no one was dealt are published with the hands once the round is over
    (they follow from the seed, secret until then, R12.1); before, nobody sees them, not even
    the ``DEALER``."""
    return is_public(round_)


def shows_qualifying(round_: Dealt, viewer: str | None, player: str) -> bool:
    """R5.6: the specials a hand qualifies for are told to its player while they decide what
    to play, and to nobody else (they say much about the cards)."""
    return viewer == player and not is_public(round_)


def viewpoint(round_: Dealt, viewer: str) -> str:
    """The viewer whose view ``viewer`` shares: a player of a round in progress sees their
    own; everyone else sees what an ``OBSERVER`` sees, so one view serves them all."""
    return viewer if not is_public(round_) and viewer in round_.players else OBSERVER
