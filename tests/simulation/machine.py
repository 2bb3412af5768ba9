"""The in-process part: a Hypothesis state machine that plays one command at a time against
a real gRPC server in this process (``InProcessServer``: a ``ManualClock``, seeded deals).

Sequential, so the model is exact: after every step each wallet must equal what the
acknowledgements say, every command must be accepted exactly when RULES.md allows it, and a
refused command must store nothing (the log's head does not move). Restarts — a crash that
drops the application, projector, follower and sweeper, or a graceful stop — come at any
step and, in ``round_with_restart``, at each phase of a round after the views have seen it;
clock jumps pass the arrange deadline so the sweeper reveals (R10.3). Each example ends with
every check of ``checks`` (the audit and rebuild through the CLI's ``main`` in process).

Hypothesis is seeded with the run's seed and has no example database here, so
``THIRTEEN_SIM_SEED`` replays the same examples; ``THIRTEEN_SIM_SHRINK=1`` shrinks a failure
to a short program (slow, so not in ``make test``).
"""

from __future__ import annotations

import itertools
import random
import shutil
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from hypothesis import HealthCheck, Phase, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from domain.rules.cards import parse_cards
from domain.rules.specials import qualifying
from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from tests.simulation.checks import Checker, Store
from tests.simulation.client import Answer, Client
from tests.simulation.driver import PHASES, Player
from tests.simulation.hostile import CATALOGUE, Hostile
from tests.simulation.model import Model, RoundSeen
from tests.simulation.report import Failures, Figures
from tests.simulation.servers import InProcessServer
from tests.support.clock import ManualClock
from tests.support.stores import store_environ

PLAYERS = ("ann", "bob", "cy", "dee", "eve")
TABLES = {"t0": "standard", "t1": "fujian"}
SEAT_MINIMUM = 48  # R8.1, both presets
MAX_SEATS = 4
SWEEP_TIMEOUT = 5.0
ACCEPTS = "the service accepts exactly what RULES.md allows"


class Simulation(RuleBasedStateMachine):
    kind: ClassVar[str] = "sqlite"
    seed: ClassVar[int] = 0
    base: ClassVar[Path] = Path(tempfile.gettempdir())
    where: ClassVar[str] = ""
    totals: ClassVar[Figures] = Figures()

    def __init__(self) -> None:
        super().__init__()
        self.stack = ExitStack()
        self.dir = Path(tempfile.mkdtemp(prefix="machine-", dir=self.base))
        self.environ = self.stack.enter_context(store_environ(self.kind, self.dir))
        self.clock = ManualClock()
        self.server = InProcessServer(self.dir / "data", self.environ, self.clock, self.seed)
        self.figures = Figures()
        self.failures = Failures(self.seed, self.where)
        self.model = Model()
        self.model.players.update(PLAYERS)
        self.client = Client(self.server, random.Random(self.seed), self.figures, self.failures)
        self._ids = itertools.count()
        self.player = Player(
            self.client, self.model, self.figures, self.failures, self._transfer_id
        )
        self.hostile_sender = Hostile(self.client, self.model, self.figures, self.failures)
        self.seats: dict[str, list[str]] = {t: [] for t in TABLES}
        self.current: dict[str, RoundSeen | None] = dict.fromkeys(TABLES)
        self.deadlines: dict[str, datetime] = {}
        self.fair: dict[str, dict[str, bool]] = {}  # round → player → a non-foul submission
        self.deals: dict[str, tuple[int, str, str]] = {}  # table → (number, request, round)
        self.number = 0

    def _transfer_id(self, kind: str) -> str:
        return f"m{self.seed}-{kind}-{next(self._ids)}"

    # What the model predicts -------------------------------------------------------------

    def balance(self, player: str) -> int:
        return self.model.expected_balances()[0][player]

    def has_wallet(self, player: str) -> bool:
        return any(t.player_id == player for t in self.model.snapshot_transfers())

    def in_round(self, player: str) -> bool:
        return any(r is not None and player in r.active for r in self.current.values())

    def table_of(self, player: str) -> str | None:
        return next((t for t, seats in self.seats.items() if player in seats), None)

    def head(self) -> int:
        return int(self.server.app.max_position())

    def judged(self, what: str, answer: Answer, predicted: bool, head: int) -> bool:
        """Accepted exactly when predicted; a refusal stores nothing."""
        self.figures.add("invariants checked", 2)
        if answer.ok != predicted:
            got = "OK" if answer.ok else f"{answer.code.name if answer.code else ''}"
            self.failures.add(
                ACCEPTS,
                f"{what}: RULES.md says {'accept' if predicted else 'refuse'}, got {got} "
                f"{answer.message}",
            )
        if not answer.ok and self.head() != head:
            self.failures.add(
                "a refused command stores nothing",
                f"{what}: refused ({answer.message}) but the log grew from {head} to {self.head()}",
            )
        return answer.ok

    # Rules ------------------------------------------------------------------------------

    @initialize()
    def open_tables_fund_and_seat_players(self) -> None:
        """Two players at each table and one standing, so that rounds happen early."""
        for player in PLAYERS:
            self.player.credit(player, 1000)
        for table, ruleset in TABLES.items():
            request = table_pb2.OpenTableRequest(table_id=table, ruleset=ruleset, request_id="o")
            answer = self.client.call("tables", "OpenTable", request)
            if not answer.ok:
                self.failures.add("an honest table opens", f"{table}: {answer.message}")
        for table, players in zip(TABLES, (PLAYERS[:2], PLAYERS[2:4]), strict=True):
            for player in players:
                self.sit_down(table, player)

    @rule(player=st.sampled_from(PLAYERS), amount=st.sampled_from([1, 30, 500, 5000]))
    def credit(self, player: str, amount: int) -> None:
        before = self.balance(player)
        answer = self.player.credit(player, amount)
        if answer.ok:
            self.check_equal("a credit adds its amount", answer.reply.balance, before + amount)

    @rule(player=st.sampled_from(PLAYERS), amount=st.sampled_from([1, 40, 900, 10**6]))
    def debit(self, player: str, amount: int) -> None:
        head, before = self.head(), self.balance(player)
        predicted = not self.in_round(player) and amount <= before
        answer = self.player.debit(player, amount)
        if self.judged(f"debit {amount} from {player}", answer, predicted, head):
            self.check_equal("a debit takes its amount", answer.reply.balance, before - amount)

    @precondition(lambda self: bool(self.model.transfers))
    @rule(data=st.data())
    def send_a_transfer_again(self, data: st.DataObject) -> None:
        transfers = self.model.snapshot_transfers()
        t = transfers[data.draw(st.integers(0, len(transfers) - 1), label="transfer")]
        head = self.head()
        kind = wallet_pb2.CreditRequest if t.kind == "credit" else wallet_pb2.DebitRequest
        request = kind(player_id=t.player_id, amount=t.amount, transfer_id=t.transfer_id)
        answer = self.client.call("wallets", t.kind.capitalize(), request)
        ok = answer.ok and answer.reply.balance == t.balance and self.head() == head
        self.check_equal(
            "a transfer sent again answers as before and stores nothing",
            ok,
            True,
            f"{t.transfer_id}: {answer.code} {answer.message}",
        )

    @rule(table=st.sampled_from(sorted(TABLES)), player=st.sampled_from(PLAYERS))
    def sit_down(self, table: str, player: str) -> None:
        head = self.head()
        predicted = player in self.seats[table] or (
            self.table_of(player) is None
            and len(self.seats[table]) < MAX_SEATS
            and self.balance(player) >= SEAT_MINIMUM
        )
        request = table_pb2.SitDownRequest(table_id=table, player_id=player)
        answer = self.client.call("tables", "SitDown", request)
        if self.judged(f"{player} sits at {table}", answer, predicted, head):
            self.seats[table] = [s.player_id for s in answer.reply.seats]

    @rule(table=st.sampled_from(sorted(TABLES)), player=st.sampled_from(PLAYERS))
    def stand_up(self, table: str, player: str) -> None:
        head = self.head()
        seen = self.current[table]
        escaping = seen is not None and player in seen.active
        request = table_pb2.StandUpRequest(table_id=table, player_id=player)
        answer = self.client.call("tables", "StandUp", request)
        if not self.judged(
            f"{player} stands up at {table}", answer, player in self.seats[table], head
        ):
            return
        self.seats[table] = [s.player_id for s in answer.reply.seats]
        self.check_equal(
            "leaving a dealt round is an escape (R10.5)", answer.reply.escaped, escaping
        )
        if seen is not None and escaping:
            seen.escapes[player] = dict(answer.reply.penalty_transfers)
            seen.active.remove(player)
            self.figures.add("escapes")
            if len(seen.active) < 2:  # R11.3
                seen.abandoned = True
                self.current[table] = None
                self.figures.add("rounds abandoned")

    @rule(table=st.sampled_from(sorted(TABLES)))
    def deal(self, table: str) -> None:
        self._deal(table)

    def _deal(self, table: str) -> RoundSeen | None:
        head = self.head()
        seated = self.seats[table]
        predicted = (
            self.current[table] is None
            and len(seated) >= 2
            and all(self.balance(p) >= SEAT_MINIMUM for p in seated)
        )
        self.number += 1
        request = table_pb2.DealRequest(
            table_id=table, client_seed=f"c{self.number}", request_id=f"d{self.number}"
        )
        answer = self.client.call("tables", "Deal", request)
        if not self.judged(f"deal at {table} with {seated}", answer, predicted, head):
            return None
        seen = self.model.dealt(answer.reply)
        self.figures.add("rounds dealt")
        self.current[table] = seen
        self.deadlines[seen.round_id] = answer.reply.deadline.ToDatetime(tzinfo=UTC)
        self.fair[seen.round_id] = {}
        self.deals[table] = (self.number, request.request_id, seen.round_id)
        expected = {p: self.balance(p) for p in seen.players}
        self.check_equal("a deal records every balance (R8.3)", seen.balances, expected)
        return seen

    @precondition(lambda self: bool(self.deals))
    @rule(table=st.sampled_from(sorted(TABLES)))
    def deal_again(self, table: str) -> None:
        if table not in self.deals:
            return
        number, request_id, round_id = self.deals[table]
        head = self.head()
        request = table_pb2.DealRequest(
            table_id=table, client_seed=f"c{number}", request_id=request_id
        )
        answer = self.client.call("tables", "Deal", request)
        self.check_equal(
            "a deal sent again returns its round and stores nothing",
            (answer.ok and answer.reply.round_id, self.head()),
            (round_id, head),
        )

    @precondition(lambda self: any(self.current.values()))
    @rule(
        table=st.sampled_from(sorted(TABLES)),
        seat=st.integers(0, 3),
        how=st.sampled_from(["good", "good", "foul", "special", "garbage"]),
    )
    def arrange(self, table: str, seat: int, how: str) -> None:
        seen = self.current[table]
        if seen is None:
            return
        self._arrange(seen, seen.active[seat % len(seen.active)], how)

    def _arrange(self, seen: RoundSeen, player: str, how: str) -> None:
        head = self.head()
        in_time = self.clock.now() < self.deadlines[seen.round_id]
        cards = parse_cards(seen.hands[player])
        if how == "garbage":  # the next player's cards: not this player's (R4.1)
            other = seen.players[(seen.players.index(player) + 1) % len(seen.players)]
            theirs = seen.hands[other]
            request = table_pb2.ArrangeRequest(
                round_id=seen.round_id,
                player_id=player,
                front=theirs[:3],
                middle=theirs[3:8],
                back=theirs[8:],
            )
            answer = self.client.call("tables", "Arrange", request)
            self.judged(f"{player} arranges cards not theirs", answer, False, head)
            return
        predicted = in_time and (how != "special" or bool(qualifying(cards)))
        answer = self.player.arrange(seen, player, how)
        if self.judged(f"{player} arranges ({how}) in {seen.round_id}", answer, predicted, head):
            self.fair[seen.round_id][player] = not answer.reply.foul

    @precondition(lambda self: any(self.current.values()))
    @rule(table=st.sampled_from(sorted(TABLES)))
    def reveal(self, table: str) -> None:
        seen = self.current[table]
        if seen is not None:
            self._reveal(table, seen)

    def _reveal(self, table: str, seen: RoundSeen) -> None:
        head = self.head()
        fair = self.fair[seen.round_id]
        predicted = self.clock.now() >= self.deadlines[seen.round_id] or all(
            fair.get(p, False) for p in seen.active
        )
        answer = self.player.reveal(seen)
        if self.judged(f"reveal {seen.round_id}", answer, predicted, head):
            self.current[table] = None

    @rule(seconds=st.sampled_from([5, 61, 3600]))
    def jump_the_clock(self, seconds: int) -> None:
        """Past the deadline the sweeper reveals (R10.3); whoever did not arrange is foul."""
        self.clock.advance(seconds)
        self.figures.add("clock jumps")
        for table, seen in list(self.current.items()):
            if seen is None or self.clock.now() < self.deadlines[seen.round_id]:
                continue
            deadline = time.monotonic() + SWEEP_TIMEOUT
            phase = None
            while time.monotonic() < deadline:
                got = self.client.call(
                    "tables", "GetRound", table_pb2.GetRoundRequest(round_id=seen.round_id)
                )
                phase = got.reply.phase if got.ok else None
                if phase == table_pb2.ROUND_PHASE_REVEALED:
                    break
                time.sleep(0.01)
            self.check_equal(
                "the sweeper reveals a round past its deadline (R10.3)",
                phase,
                table_pb2.ROUND_PHASE_REVEALED,
                seen.round_id,
            )
            if self.player.reveal(seen).ok:
                self.figures.add("rounds revealed at the deadline")
                self.current[table] = None

    @rule(kind=st.sampled_from(["crash", "graceful"]), settled=st.booleans())
    def restart(self, kind: str, settled: bool) -> None:
        self._restart(kind, settled, "a random step")

    def _restart(self, kind: str, settled: bool, phase: str) -> None:
        if settled:  # the views have seen everything so far
            self.server.caught_up(5.0)
        self.server.restart(kind)
        name = "restarts crash (in process)" if kind == "crash" else "restarts graceful"
        self.figures.add(name)
        self.figures.add(f"  at {phase} ({kind})")

    @rule(table=st.sampled_from(sorted(TABLES)), how=st.sampled_from(["good", "special"]))
    def play_a_round(self, table: str, how: str) -> None:
        """A whole round: deal, everyone arranges (declaring a special when asked and held),
        reveal."""
        seen = self.current[table]
        if seen is not None:
            self._finish(table, seen)
        if not self._seat_two(table):
            return
        seen = self._deal(table)
        if seen is None:
            return
        for player in list(seen.active):
            held = qualifying(parse_cards(seen.hands[player]))
            self._arrange(seen, player, "special" if how == "special" and held else "good")
        self._reveal(table, seen)

    @rule(
        table=st.sampled_from(sorted(TABLES)),
        phase=st.sampled_from(PHASES),
        kind=st.sampled_from(["crash", "graceful"]),
    )
    def round_with_restart(self, table: str, phase: str, kind: str) -> None:
        """A whole round with a restart at one phase, once the views have seen that phase."""
        seen = self.current[table]
        if seen is not None:
            self._finish(table, seen)
        if not self._seat_two(table):
            return
        seen = self._deal(table)
        if seen is None:
            return
        if phase == "after_deal":
            self._restart(kind, True, phase)
        for k, player in enumerate(list(seen.active)):
            self._arrange(seen, player, "good")
            if phase == "between_arranges" and k == 0:
                self._restart(kind, True, phase)
        if phase == "after_last_arrange":
            self._restart(kind, True, phase)
        self._reveal(table, seen)
        if phase == "after_reveal":
            self._restart(kind, True, phase)

    def _finish(self, table: str, seen: RoundSeen) -> None:
        if self.clock.now() < self.deadlines[seen.round_id]:
            for player in list(seen.active):
                self._arrange(seen, player, "good")
        self._reveal(table, seen)

    def _seat_two(self, table: str) -> bool:
        for player in PLAYERS:
            if len(self.seats[table]) >= 2:
                break
            if self.table_of(player) is not None:
                continue
            if self.balance(player) < SEAT_MINIMUM:
                self.credit(player, 500)
            self.sit_down(table, player)
        return len(self.seats[table]) >= 2 and all(
            self.balance(p) >= SEAT_MINIMUM for p in self.seats[table]
        )

    @rule(name=st.sampled_from(sorted(CATALOGUE)), honest=st.sampled_from(PLAYERS))
    def hostile(self, name: str, honest: str) -> None:
        head = self.head()
        self.hostile_sender.send(name, f"m{self.seed}-{next(self._ids)}", honest)
        self.check_equal("a refused hostile call stores nothing", self.head(), head, name)

    # After every step ---------------------------------------------------------------------

    def check_equal(self, invariant: str, got: Any, want: Any, what: str = "") -> None:
        self.figures.add("invariants checked")
        if got != want:
            self.failures.add(invariant, f"{what} got {got!r}, expected {want!r}".strip())

    @invariant()
    def wallets_are_what_was_acknowledged(self) -> None:
        expected, _ = self.model.expected_balances()
        for player in PLAYERS:
            if not self.has_wallet(player):
                continue
            request = wallet_pb2.GetBalanceRequest(player_id=player)
            got = self.client.call("wallets", "GetBalance", request)
            self.check_equal(
                "each balance = its acknowledged transfers, settlements and escapes",
                got.reply.balance if got.ok else got.code,
                expected[player],
                player,
            )
        self.failures.raise_if_any(self.figures)

    def teardown(self) -> None:
        try:
            if not self.failures:
                for table, seen in list(self.current.items()):
                    if seen is not None:
                        self._finish(table, seen)
                store = Store(self.kind, self.dir / "data", self.environ)
                checker = Checker(
                    self.model,
                    self.client,
                    self.figures,
                    self.failures,
                    store,
                    in_process_cli=True,
                )
                checker.online()
                self.server.stop()
                checker.offline(self.server)
        finally:
            self.server.abort()
            self.stack.close()
            shutil.rmtree(self.dir, ignore_errors=True)
            type(self).totals.merge(self.figures)
        self.failures.raise_if_any(self.figures)


def run_machine(
    kind: str, seed: int, base: Path, *, examples: int, steps: int, where: str, shrink: bool
) -> Figures:
    """Run the machine for ``examples`` seeded examples of up to ``steps`` steps."""
    totals = Figures()
    machine = type(
        "Simulation",
        (Simulation,),
        {"kind": kind, "seed": seed, "base": base, "where": where, "totals": totals},
    )
    hypothesis_seed(seed)(machine)
    phases = [Phase.explicit, Phase.generate] + ([Phase.shrink] if shrink else [])
    run_state_machine_as_test(
        machine,
        settings=settings(
            max_examples=examples,
            stateful_step_count=steps,
            deadline=None,
            database=None,
            phases=phases,
            suppress_health_check=list(HealthCheck),
            print_blob=False,
            report_multiple_bugs=False,
        ),
    )
    return totals
