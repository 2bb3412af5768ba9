"""Errors a caller can cause by breaking a rule; each message names the problem."""


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
