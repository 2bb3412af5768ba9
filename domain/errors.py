"""Errors a caller can cause by breaking a rule; each message names the problem, quoting what
the caller sent through ``quoted``.

>>> print(quoted("As"), quoted("x" * 100), quoted(2**200))
'As' 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx… an integer of 201 bits
"""

MAX_QUOTED = 40
"""Characters of a caller's input an error message quotes; the rest is cut off with '…'."""


def quoted(value: object, limit: int = MAX_QUOTED) -> str:
    """``repr(value)`` for an error message, cut to about ``limit`` characters.

    Input a caller controls is quoted through this, so that a refusal stays short whatever
    the caller sent (a long status message cannot be returned at all: gRPC limits metadata).
    """
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"  # repr may refuse 4,300+ digits
    text = repr(value[: limit + 1] if isinstance(value, str) else value)
    return text if len(text) <= limit + 2 else text[:limit] + "…"


class RuleError(ValueError):
    """Base of every rule violation. ``field`` names the input at fault, when there is one."""

    def __init__(self, message: str, *, field: str = "") -> None:
        super().__init__(message)
        self.field = field

    @property
    def message(self) -> str:
        return str(self.args[0])


class CardError(RuleError):
    """A card that cannot be parsed, or a card given twice (R1)."""


class ArrangementError(RuleError):
    """Piles of the wrong size or cards that are not the player's (R4.1)."""


class SpecialError(RuleError):
    """An unknown special, or a declaration the cards do not support (R5.4)."""


class RulesetError(RuleError):
    """An unknown preset or parameter, or a parameter value out of range (R13)."""


class StakeError(RuleError):
    """A balance below what the table requires (R8)."""


class DeclarationRefused(SpecialError):
    """R5.4: the cards do not support the declared special; nothing changes."""


class PhaseError(RuleError):
    """A command that the round or table lifecycle does not allow now (R10)."""


class SeatError(RuleError):
    """Seating rules: a full table, a second table, a player not seated (R10.1, R10.6)."""
