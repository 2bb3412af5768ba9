"""The rules of 十三水 (Thirteen / Chinese poker) as a pure library.

Everything here follows the rule book (``docs/rules.md``; rule IDs R1–R13 are cited where they
are implemented) and is free of I/O, clocks, randomness and transport: seeds and times come in
as arguments. Rooms by reason to change: ``rules`` (the game), ``fairness`` (seeds, shuffle,
randomness tests), ``tlog`` (hash chains and the transparency log's crypto); here at the top,
the aggregates (``round``, ``table``, ``wallet``: their module paths are the stored events'
topics, so they never move) and the policies across them (``showdown``, ``results``,
``visibility``, ``audit``).
"""
