"""A seeded fault simulation: the safety net for the whole service.

Two parts, both run by ``make test`` (short) and by ``make soak MINUTES=N`` (long):

- ``machine``: a Hypothesis ``RuleBasedStateMachine`` against an in-process server with a
  ``ManualClock`` and seeded deal seeds. One command at a time, so its model of every wallet is
  exact after every step; restarts (a crash that drops the application, projector and follower,
  or a graceful stop) at every phase of a round, clock jumps past the arrange deadline, hostile
  input. A failure shrinks to a short program (with ``THIRTEEN_SIM_SHRINK=1``).
- ``driver``: many tables of 2–4 players played by client threads, with top-ups and cash-outs
  running concurrently, short gRPC deadlines that sometimes fire, retries with the same
  ``request_id``/``transfer_id``, against a real ``thirteen serve`` subprocess that is
  restarted at every phase of a round (SIGTERM and ``kill -9``) and killed at random moments;
  on PostgreSQL the server's own sessions are also cut with ``pg_terminate_backend``.

After every run ``checks`` compares the server with what the clients saw ACKNOWLEDGED: the real
``thirteen audit --all`` passes, ledgers equal wallets, coins are conserved, nobody is negative,
one settlement per revealed round, every acknowledged effect is present and nothing refused left
a trace, no error in the server's logs, and ``thirteen projections rebuild`` equals the live
views.

Running it:

    make test                                   # includes the short runs (about 50 s)
    .venv/bin/python -m pytest tests/simulation -s       # just these, with figures
    THIRTEEN_SIM_SEED=123 .venv/bin/python -m pytest tests/simulation -s   # replay a seed
    THIRTEEN_SIM_SHRINK=1 THIRTEEN_SIM_SEED=123 .venv/bin/python -m pytest \\
        tests/simulation/test_machine.py -s                 # shrink a machine failure
    make soak MINUTES=10                        # 10 minutes per store, in cycles

Modules: ``servers`` (the subprocess and in-process servers), ``client`` (retries with the
same ids until a definite answer), ``model`` (what was acknowledged), ``driver`` (the
concurrent workload and the faults), ``hostile`` (huge and malformed values), ``checks`` (the
invariants), ``machine`` (the state machine), ``run`` (one driver run), ``memory`` (whether a
server's resident size levels off as rounds are played), ``__main__`` (soak).

Seeds: every random choice of a run comes from one seed (``random.Random(seed)`` for the
driver, Hypothesis's ``@seed`` for the machine); the run prints it and ``THIRTEEN_SIM_SEED=N``
replays it. The seed fixes the plan — which tables, players, amounts, arrangements, faults and at
which phase — not the interleaving of the driver's threads with each other and with the server,
which the operating system decides; so a replay of a failing driver seed reproduces a race
often, not always. The machine is sequential and replays exactly.
"""
