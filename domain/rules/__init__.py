"""The rules of the game (R1–R9, R11, R13): cards, pile hands, arrangements and fouls, special
hands, the showdown's scoring, settlement, limits, stakes and rulesets. Pure functions and
frozen values; they change when a rule changes."""
