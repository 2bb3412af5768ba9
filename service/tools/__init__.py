"""Offline commands: they read a store or standard input and never serve. The ``thirteen``
console script (``cli``), the score/suggest JSON contract, replay, explain, the demo and the
audit's command line."""
