"""The rules of 十三水 (Thirteen / Chinese poker) as a pure library.

Everything here follows ``RULES.md`` (rule IDs R1–R13 are cited where they are implemented) and
is free of I/O, clocks, randomness and transport: seeds and times come in as arguments.
"""
