"""The concurrent part: tables of 2–4 players played by client threads while a bank tops
players up (1 coin under a new transfer id each time) and cashes them out at a fixed rate
(open loop), a hostile thread sends huge and malformed values, and a chaos thread kills the
server at random moments, cuts its PostgreSQL sessions and (in process) jumps the clock.
Restarts at every phase of a round are planned: the table that reaches the phase first
restarts the server itself, so the phase is exact.

Every random choice comes from ``random.Random(plan.seed)``: the plan and each thread's own
generator are drawn from it before any thread starts. The threads' interleaving is not
seeded.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import grpc

from domain.rules.cards import format_cards, parse_cards
from domain.rules.escape import escape_transfers
from domain.rules.ruleset import PRESETS
from domain.rules.specials import qualifying
from domain.rules.suggest import suggest
from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from tests.simulation.client import Answer, Client
from tests.simulation.hostile import CATALOGUE, Hostile
from tests.simulation.model import Model, Piles, RoundSeen, Transfer
from tests.simulation.report import Failures, Figures

PHASES = ("after_deal", "between_arranges", "after_last_arrange", "after_reveal")
FAILED_PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION


@dataclass
class Plan:
    """What a run will do, drawn from its seed."""

    seed: int
    seconds: float
    tables: list[tuple[str, str, list[str]]]  # (table id, ruleset, players)
    restarts: list[tuple[str, str]]  # (phase, "graceful" | "hard"), in the order they happen
    random_kills: int
    pg_terminations: int
    clock_jumps: int
    hostile: list[str]
    bank_rate: float  # transfers per second
    short_deadline: float
    calm: float = 0.4  # the share of the time before the first planned restart
    thread_seeds: dict[str, int] = field(default_factory=dict)

    @classmethod
    def draw(
        cls,
        seed: int,
        seconds: float,
        *,
        tables: int = 4,
        every_restart: bool = True,
        random_kills: int = 1,
        pg_terminations: int = 2,
        clock_jumps: int = 0,
        hostile: int = 10,
        bank_rate: float = 60.0,
        calm: float = 0.4,
    ) -> Plan:
        rng = random.Random(seed)
        tag = f"s{seed}"
        laid_out = []
        for t in range(tables):
            players = [f"{tag}-t{t}-p{k}" for k in range(rng.randint(2, 4))]
            laid_out.append((f"{tag}-t{t}", rng.choice(sorted(PRESETS)), players))
        if every_restart:  # every phase, each way, in a seeded order
            restarts = [(phase, kind) for phase in PHASES for kind in ("graceful", "hard")]
        else:  # every phase once, two of them each way (which, the seed says)
            kinds = ["graceful", "graceful", "hard", "hard"]
            rng.shuffle(kinds)
            restarts = list(zip(PHASES, kinds, strict=True))
        rng.shuffle(restarts)
        names = sorted(CATALOGUE)
        chosen = rng.sample(names, min(hostile, len(names)))
        plan = cls(
            seed=seed,
            seconds=seconds,
            tables=laid_out,
            restarts=restarts,
            random_kills=random_kills,
            pg_terminations=pg_terminations,
            clock_jumps=clock_jumps,
            hostile=chosen,
            bank_rate=bank_rate,
            short_deadline=0.05,
            calm=calm,
        )
        for name in [t for t, _, _ in laid_out] + ["bank", "chaos", "hostile", "final"]:
            plan.thread_seeds[name] = rng.getrandbits(64)
        return plan

    @property
    def players(self) -> list[str]:
        return [p for _, _, ps in self.tables for p in ps]


class Run:
    """What every thread of one run shares."""

    def __init__(
        self,
        plan: Plan,
        server: Any,
        model: Model,
        figures: Figures,
        failures: Failures,
        *,
        terminate: Callable[[], int] | None = None,
    ) -> None:
        self.plan = plan
        self.server = server
        self.model = model
        self.figures = figures
        self.failures = failures
        self.terminate = terminate  # cuts the server's PostgreSQL sessions; returns how many
        self.started = time.monotonic()
        # After play: settling every round and the checks; a service that stops answering
        # fails the run here instead of hanging it.
        self.stop_at = self.started + plan.seconds + 120.0
        self.stop = threading.Event()
        self._ids = itertools.count()
        self._ids_lock = threading.Lock()
        self.chaos = Chaos(self)
        model.players.update(plan.players)

    def client(self, name: str) -> Client:
        rng = random.Random(self.plan.thread_seeds[name])
        return Client(
            self.server,
            rng,
            self.figures,
            self.failures,
            short_deadline=self.plan.short_deadline,
            stop_at=self.stop_at,
        )

    def transfer_id(self, kind: str) -> str:
        with self._ids_lock:
            return f"s{self.plan.seed}-{kind}-{next(self._ids)}"

    def time_left(self) -> float:
        return self.plan.seconds - (time.monotonic() - self.started)

    def guarded(self, name: str, body: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                body()
            except Exception:
                self.failures.add("the driver itself runs without error", traceback.format_exc())

        return run


# Commands with their acknowledgements -------------------------------------------------------


class Player:
    """Commands as a client sends them, recording what was acknowledged in the model."""

    def __init__(
        self,
        client: Client,
        model: Model,
        figures: Figures,
        failures: Failures,
        transfer_id: Callable[[str], str],
    ) -> None:
        self.client = client
        self.model = model
        self.figures = figures
        self.failures = failures
        self.transfer_id = transfer_id

    @classmethod
    def of(cls, run: Run, name: str) -> Player:
        return cls(run.client(name), run.model, run.figures, run.failures, run.transfer_id)

    def credit(self, player: str, amount: int, transfer_id: str = "") -> Answer:
        transfer_id = transfer_id or self.transfer_id("in")
        request = wallet_pb2.CreditRequest(player_id=player, amount=amount, transfer_id=transfer_id)
        answer = self.client.call("wallets", "Credit", request, what=transfer_id)
        if answer.ok:
            self.model.acknowledged_transfer(
                Transfer(transfer_id, player, "credit", amount, answer.reply.balance)
            )
            self.figures.add("credits acknowledged")
        elif answer.resolved:
            self.model.refused_transfer(transfer_id, player)
            self.figures.add("transfers refused")
            self.failures.add(
                "an honest credit is accepted",
                f"{transfer_id} ({amount} to {player}): "
                f"{answer.code.name if answer.code else ''} {answer.message}",
            )
        return answer

    def debit(self, player: str, amount: int) -> Answer:
        transfer_id = self.transfer_id("out")
        request = wallet_pb2.DebitRequest(player_id=player, amount=amount, transfer_id=transfer_id)
        # Known before the call: a credit acknowledged while the debit is on its way (another
        # thread's) may land after the debit was refused for want of a wallet.
        credited = any(t.player_id == player for t in self.model.snapshot_transfers())
        answer = self.client.call("wallets", "Debit", request, what=transfer_id)
        if answer.ok:
            self.model.acknowledged_transfer(
                Transfer(transfer_id, player, "debit", amount, answer.reply.balance)
            )
            self.figures.add("debits acknowledged")
        elif answer.resolved:
            self.model.refused_transfer(transfer_id, player)
            self.figures.add("transfers refused")
            never_credited = answer.code == grpc.StatusCode.NOT_FOUND and not credited
            if answer.code != FAILED_PRECONDITION and not never_credited:
                self.failures.add(
                    "a debit is accepted or refused for a rule",
                    f"{transfer_id}: {answer.code.name if answer.code else ''} {answer.message}",
                )
        return answer

    def arrange(self, seen: RoundSeen, player: str, how: str) -> Answer:
        cards = parse_cards(seen.hands[player])
        request = table_pb2.ArrangeRequest(round_id=seen.round_id, player_id=player)
        piles: Piles | str
        if how == "special":
            request.special = "any"
            piles = "any"
        else:
            a = suggest(cards, PRESETS["standard"]).arrangement
            order = (a.front, a.back, a.middle) if how == "foul" else (a.front, a.middle, a.back)
            front, middle, back = (tuple(format_cards(p)) for p in order)
            piles = (front, middle, back)
            request.front.extend(piles[0])
            request.middle.extend(piles[1])
            request.back.extend(piles[2])
        answer = self.client.call("tables", "Arrange", request, what=f"{seen.round_id}/{player}")
        if answer.ok:
            seen.arranged[player] = answer.reply.special or piles
            seen.maybe_arranged.pop(player, None)
            self.figures.add("arrangements")
        elif answer.resolved and answer.attempts > 1:  # an earlier attempt may have landed
            seen.maybe_arranged.setdefault(player, []).append(piles)
        return answer

    def reveal(self, seen: RoundSeen) -> Answer:
        request = table_pb2.RevealRequest(round_id=seen.round_id)
        answer = self.client.call("tables", "Reveal", request, what=seen.round_id)
        if answer.ok and seen.coins is None:
            self.model.revealed(seen.round_id, answer.reply)
            self.figures.add("rounds revealed")
        return answer

    def get_round(self, round_id: str) -> Answer:
        request = table_pb2.GetRoundRequest(round_id=round_id)
        return self.client.call("tables", "GetRound", request, what=round_id)

    def finish(self, seen: RoundSeen) -> None:
        """Bring a round to its end: arrange whoever has not, then reveal (used after faults
        and at the end of a run, so that every round the clients know of is settled)."""
        for _ in range(3):
            if seen.ended:
                return
            answer = self.reveal(seen)
            if answer.ok:
                return
            if not answer.refused(FAILED_PRECONDITION):
                return  # already reported by the client
            got = self.get_round(seen.round_id)
            if got.ok and got.reply.phase == table_pb2.ROUND_PHASE_ABANDONED:
                seen.abandoned = True
                return
            for player in list(seen.active):  # a missing or foul arrangement holds it up
                self.arrange(seen, player, "good")
        self.failures.add(
            "every round the clients know of can be finished",
            f"round {seen.round_id} still open after arranging everyone",
        )


# Tables ---------------------------------------------------------------------------------------


class TableWorker(Player):
    def __init__(self, run: Run, table_id: str, ruleset: str, players: list[str]) -> None:
        super().__init__(
            run.client(table_id), run.model, run.figures, run.failures, run.transfer_id
        )
        self.run = run
        self.rng = random.Random(run.plan.thread_seeds[table_id] ^ 0x5EED)
        self.table_id = table_id
        self.ruleset = ruleset
        self.players = players
        self.seated: set[str] = set()
        self.number = 0

    def play(self) -> None:
        for player in self.players:
            self.credit(player, self.rng.choice([300, 1000, 3000]), f"{self.table_id}:{player}")
        request = table_pb2.OpenTableRequest(
            table_id=self.table_id, ruleset=self.ruleset, request_id="open"
        )
        opened = self.client.call("tables", "OpenTable", request, what=self.table_id)
        if not opened.ok:
            self.failures.add("an honest table opens", f"{self.table_id}: {opened.message}")
            return
        while not self.run.stop.is_set() and self.run.time_left() > 0:
            self.seat_everyone()
            if len(self.seated) < 2:
                time.sleep(0.05)
                continue
            self.play_round()
            if self.rng.random() < 0.25:  # coins out between rounds (R10.6 allows it)
                self.debit(self.rng.choice(self.players), self.rng.randint(1, 30))
            if self.seated and self.rng.random() < 0.1:  # leaving between rounds (R10.5)
                self.stand_up(self.rng.choice(sorted(self.seated)), None)

    def seat_everyone(self) -> None:
        for player in self.players:
            if player in self.seated:
                continue
            request = table_pb2.SitDownRequest(table_id=self.table_id, player_id=player)
            answer = self.client.call("tables", "SitDown", request, what=player)
            if answer.refused(FAILED_PRECONDITION) and "coins" in answer.message.lower():
                self.credit(player, 100)
                answer = self.client.call("tables", "SitDown", request, what=player)
            if answer.ok:
                self.seated = {s.player_id for s in answer.reply.seats}
            else:
                self.failures.add(
                    "an honest player with coins can sit down",
                    f"{player} at {self.table_id}: {answer.code} {answer.message}",
                )

    def stand_up(self, player: str, seen: RoundSeen | None) -> None:
        """StandUp is not idempotent: a repeat after a lost answer says "not seated"; then
        the round tells whether the first attempt made an escape."""
        request = table_pb2.StandUpRequest(table_id=self.table_id, player_id=player)
        answer = self.client.call("tables", "StandUp", request, what=player)
        if answer.ok:
            self.seated = {s.player_id for s in answer.reply.seats}
            if seen is not None and answer.reply.escaped:
                self._escaped(seen, player, dict(answer.reply.penalty_transfers))
            elif seen is not None and not self._over(seen):  # revealed at the deadline: a leave
                self.failures.add(
                    "leaving between the deal and the showdown is an escape (R10.5)",
                    f"{player} left round {seen.round_id} without escaping",
                )
            return
        if answer.refused(FAILED_PRECONDITION) and answer.attempts > 1:
            self.seated.discard(player)
            if seen is not None:
                got = self.get_round(seen.round_id)
                if got.ok and any(p.player_id == player and p.escaped for p in got.reply.players):
                    self._escaped(seen, player, None)
            return
        self.failures.add(
            "a seated player can stand up", f"{player} at {self.table_id}: {answer.message}"
        )

    def _over(self, seen: RoundSeen) -> bool:
        got = self.get_round(seen.round_id)
        return got.ok and got.reply.phase != table_pb2.ROUND_PHASE_DEALT

    def _escaped(self, seen: RoundSeen, player: str, transfers: dict[str, int] | None) -> None:
        ruleset = PRESETS[self.ruleset]
        expected = escape_transfers(
            player,
            seen.active,
            base=seen.base_stake,
            balance_at_deal=seen.balances[player],
            multiple=ruleset.escape_penalty_multiple,
        )
        if transfers is not None and transfers != expected:
            self.failures.add(
                "an escape moves the coins of R11.1 and R11.2",
                f"{player} in {seen.round_id}: acknowledged {transfers}, rules say {expected}",
            )
        seen.escapes[player] = expected if transfers is None else transfers
        seen.active.remove(player)
        self.figures.add("escapes")
        if len(seen.active) < 2:  # R11.3
            seen.abandoned = True
            self.figures.add("rounds abandoned")

    def play_round(self) -> None:
        self.number += 1
        request = table_pb2.DealRequest(
            table_id=self.table_id,
            client_seed=f"{self.run.plan.seed}:{self.number}",
            request_id=f"deal-{self.number}",
        )
        dealt = self.client.call("tables", "Deal", request, what=f"{self.table_id}#{self.number}")
        if not dealt.ok:
            if dealt.refused(FAILED_PRECONDITION) and "in progress" in dealt.message:
                self.round_in_progress(dealt.message)
            elif dealt.refused(FAILED_PRECONDITION) and "coins" in dealt.message:
                self.top_up_short_players()
            elif dealt.refused(FAILED_PRECONDITION):
                self.seated.clear()  # someone is not seated any more: sit everyone again
            else:
                self.failures.add(
                    "a table with two seated players and coins deals",
                    f"{self.table_id}: {dealt.code} {dealt.message}",
                )
            return
        seen = self.model.dealt(dealt.reply)
        self.figures.add("rounds dealt")
        self.run.chaos.at_phase("after_deal")
        if self.rng.random() < 0.08:
            self.stand_up(self.rng.choice(seen.active), seen)
            if seen.abandoned:
                return
        order = list(seen.active)
        self.rng.shuffle(order)
        for k, player in enumerate(order):
            draw = self.rng.random()
            cards = parse_cards(seen.hands[player])
            if draw < 0.12:
                answer = self.arrange(seen, player, "foul")  # a draft; replaced below (R4.3)
                if not answer.ok:
                    break
            how = "special" if draw > 0.6 and qualifying(cards) else "good"
            answer = self.arrange(seen, player, how)
            if not answer.ok:
                if not answer.refused(FAILED_PRECONDITION):  # past the deadline: reveal
                    self.failures.add(
                        "an honest arrangement is accepted",
                        f"{player} in {seen.round_id}: {answer.code} {answer.message}",
                    )
                break
            if k == 0 and len(order) > 1:
                self.run.chaos.at_phase("between_arranges")
        self.run.chaos.at_phase("after_last_arrange")
        answer = self.reveal(seen)
        if not answer.ok:
            self.failures.add(
                "a round every player arranged can be revealed (R10.3)",
                f"{seen.round_id}: {answer.code} {answer.message}",
            )
            self.finish(seen)
        self.run.chaos.at_phase("after_reveal")

    def round_in_progress(self, message: str) -> None:
        """The table has a round open: one of ours that a fault left open is finished; one
        that no client was ever told of is a lost acknowledgement."""
        request = table_pb2.GetTableRequest(table_id=self.table_id)
        got = self.client.call("tables", "GetTable", request, what=self.table_id)
        current = got.reply.current_round_id if got.ok else ""
        seen = self.model.rounds.get(current)
        if seen is not None:
            self.finish(seen)
            return
        self.failures.add(
            "every round a table holds was acknowledged to some client",
            f"{self.table_id} has round {current!r} that no Deal answer named ({message})",
        )
        self.run.stop.wait(1.0)

    def top_up_short_players(self) -> None:
        """R8.4: the deal names who is short; anyone below the minimum gets coins."""
        for player in self.players:
            request = wallet_pb2.GetBalanceRequest(player_id=player)
            got = self.client.call("wallets", "GetBalance", request, what=player)
            if got.ok and got.reply.balance < 100:
                self.credit(player, 200)


# Around the tables ----------------------------------------------------------------------------


class Bank:
    """Top-ups of 1 coin under a new transfer id each time, and small cash-outs, for any
    player at any moment. Open loop: transfers go out at the plan's rate whether or not the
    earlier ones were answered, carried by a pool of tellers, as many independent clients
    would send them; a load that slowed down with the service would hide its races, and after
    a restart the backlog arrives at once."""

    TELLERS = 12

    def __init__(self, run: Run) -> None:
        self.run = run
        self.rng = random.Random(run.plan.thread_seeds["bank"])

    def work(self) -> None:
        plan = self.run.plan
        pause = 1.0 / plan.bank_rate
        next_at = time.monotonic()
        with ThreadPoolExecutor(self.TELLERS, thread_name_prefix="teller") as tellers:
            while not self.run.stop.is_set() and self.run.time_left() > 0:
                next_at += pause
                delay = next_at - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                player = self.rng.choice(plan.players)
                amount = 1 if self.rng.random() < 0.9 else -self.rng.randint(1, 5)
                seed = self.rng.getrandbits(64)
                tellers.submit(self.run.guarded("bank", partial(self.send, player, amount, seed)))
                if time.monotonic() - self.run.started < plan.calm * plan.seconds:
                    self.run.figures.add("bank transfers sent in the calm share")

    def send(self, player: str, amount: int, seed: int) -> None:
        run = self.run
        client = Client(
            run.server,
            random.Random(seed),
            run.figures,
            run.failures,
            short_deadline=run.plan.short_deadline,
            stop_at=run.stop_at,
        )
        teller = Player(client, run.model, run.figures, run.failures, run.transfer_id)
        if amount > 0:
            teller.credit(player, amount)
        else:
            teller.debit(player, -amount)


class Chaos:
    """Restarts at planned phases (called by the table that reaches the phase), and kills,
    session cuts and clock jumps at random moments (its own thread)."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self.pending = list(run.plan.restarts)
        self._lock = threading.Lock()
        self.spacing = 0.2  # let some play happen between two restarts
        self.settle = 0.25  # a few projector intervals (50 ms)

        self._last = 0.0

    def hard_kind(self) -> str:
        return "kill9" if "kill9" in self.run.server.kinds else "crash"

    def restart(self, kind: str, phase: str = "") -> None:
        kind = self.hard_kind() if kind == "hard" else kind
        try:
            self.run.server.restart(kind)
        except Exception as error:
            self.run.failures.add(
                "the server starts again on its own store", f"after {kind}: {error}"
            )
            self.run.stop.set()
            return
        name = {
            "graceful": "restarts graceful",
            "kill9": "restarts kill -9",
            "crash": "restarts crash (in process)",
        }[kind]
        self.run.figures.add(name)
        self.run.figures.add(f"  {'at ' + phase if phase else 'at a random moment'} ({kind})")
        self._last = time.monotonic()

    def at_phase(self, phase: str) -> None:
        if self.run.stop.is_set() or self.run.time_left() <= 0:
            return
        if time.monotonic() - self.run.started < self.run.plan.calm * self.run.plan.seconds:
            return  # first the load alone: races under load need no restarts to show
        with self._lock:
            if time.monotonic() - self._last < self.spacing:
                return
            found = next((i for i, (p, _) in enumerate(self.pending) if p == phase), None)
            if found is None:
                return
            _, kind = self.pending.pop(found)
            # The table that reached the phase waits for nothing else to happen to its round;
            # meanwhile the projector and the follower see the phase (an unprojected phase is
            # what a restart at a random moment gives).
            time.sleep(self.settle)
            self.restart(kind, phase)

    def work(self) -> None:
        plan = self.run.plan
        rng = random.Random(plan.thread_seeds["chaos"])
        events = ["kill"] * plan.random_kills + ["cut"] * plan.pg_terminations
        events += ["jump"] * plan.clock_jumps
        moments = sorted(rng.uniform(plan.calm, 0.9) * plan.seconds for _ in events)
        rng.shuffle(events)
        for moment, what in zip(moments, events, strict=True):
            while not self.run.stop.is_set() and time.monotonic() - self.run.started < moment:
                time.sleep(0.02)
            if self.run.stop.is_set():
                return
            if what == "kill":
                with self._lock:
                    self.restart("hard")
            elif what == "cut" and self.run.terminate is not None:
                self.run.figures.add("postgres sessions terminated", self.run.terminate())
            elif what == "jump" and self.run.server.clock is not None:
                self.run.server.clock.advance(rng.choice([61, 61, 3600]))  # past R10.2's 60 s
                self.run.figures.add("clock jumps")


class HostileSender:
    def __init__(self, run: Run) -> None:
        self.run = run
        self.rng = random.Random(run.plan.thread_seeds["hostile"])
        self.hostile = Hostile(run.client("hostile"), run.model, run.figures, run.failures)

    def work(self) -> None:
        plan = self.run.plan
        moments = sorted(self.rng.uniform(0.05, 0.9) * plan.seconds for _ in plan.hostile)
        for n, (moment, name) in enumerate(zip(moments, plan.hostile, strict=True)):
            while not self.run.stop.is_set() and time.monotonic() - self.run.started < moment:
                time.sleep(0.02)
            if self.run.stop.is_set():
                return
            self.hostile.send(name, f"s{plan.seed}-{n}", self.rng.choice(plan.players))


# One run --------------------------------------------------------------------------------------


def drive(run: Run) -> None:
    """Play until the plan's time is up, then settle everything the clients know of."""
    workers = [TableWorker(run, t, r, ps) for t, r, ps in run.plan.tables]
    threads = [
        threading.Thread(target=run.guarded(w.table_id, w.play), name=w.table_id) for w in workers
    ]
    threads.append(threading.Thread(target=run.guarded("bank", Bank(run).work), name="bank"))
    threads.append(threading.Thread(target=run.guarded("chaos", run.chaos.work), name="chaos"))
    sender = HostileSender(run)
    threads.append(threading.Thread(target=run.guarded("hostile", sender.work), name="hostile"))
    for thread in threads:
        thread.start()
    limit = time.monotonic() + run.plan.seconds + 180  # every call is bounded; so is the run
    for thread in threads:
        thread.join(timeout=max(0.0, limit - time.monotonic()))
    run.stop.set()
    stuck = [t.name for t in threads if t.is_alive()]
    if stuck:
        run.failures.add("the driver's threads end", f"still running: {stuck}")
    if run.chaos.pending:
        run.figures.add("planned restarts not reached", len(run.chaos.pending))
    settle_everything(run)


def settle_everything(run: Run) -> None:
    """Every round the clients know of ends (arranged and revealed) before the checks."""
    if run.server.broken:
        return
    finisher = Player.of(run, "final")
    for seen in run.model.snapshot_rounds():
        if not seen.ended:
            finisher.finish(seen)
