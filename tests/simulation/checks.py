"""The invariants after a run, against what the clients were told (``model``).

While the server still runs (``online``): wallets against the acknowledgements (conservation,
per player, nobody negative), every acknowledged effect present (rounds, arrangements, coins,
transfers — a transfer sent again with its id answers as it did the first time), no trace of a
refused or hostile call, and the views catching up with the wallets. After a graceful stop
(``offline``): the server's logs, the views read directly (one settlement per revealed round,
the ledger's transfers are exactly the acknowledged ones, balanced journals), the real
``thirteen audit --all`` and ``thirteen projections rebuild`` compared with the live views.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from projections.folds import EXTERNAL
from projections.store import ViewStore
from service._generated.thirteen.v1 import results_pb2, table_pb2, wallet_pb2
from tests.simulation.client import Client
from tests.simulation.model import Model, RoundSeen
from tests.simulation.report import Failures, Figures
from tests.simulation.servers import SCRIPT

NOT_FOUND = grpc.StatusCode.NOT_FOUND
BAD_EVENTS = frozenset(
    {"projection_failed", "listener_failed", "rpc_failed", "follower_read_failed", "sweep_failed"}
)
# Errors that a terminated PostgreSQL session causes in whoever held it: an echo of a fault
# this simulation injected, counted but not a failure of the service's own logic.
FAULT_ECHOES = re.compile(
    "terminating connection due to administrator command|server closed the connection "
    "unexpectedly|the connection is closed|connection is lost|consuming input failed|"
    "AdminShutdown|connection already closed|SSL connection has been closed",
    re.IGNORECASE,
)
REPLAYED_TRANSFERS = 120  # at most this many acknowledged transfers are sent again
VIEWS_TIMEOUT = 10.0


@dataclass
class Store:
    kind: str  # "sqlite" or "postgres"
    data: Path
    environ: dict[str, str]

    def views(self) -> ViewStore:
        if self.kind == "sqlite":
            return ViewStore(path=self.data / "views.sqlite")
        e = self.environ
        settings = {
            "host": e.get("POSTGRES_HOST", ""),
            "port": e.get("POSTGRES_PORT", ""),
            "user": e.get("POSTGRES_USER", ""),
            "dbname": e.get("POSTGRES_DBNAME", ""),
            "password": e.get("POSTGRES_PASSWORD", ""),
        }
        settings = {k: v for k, v in settings.items() if v}
        return ViewStore(postgres={**settings, "schema": e.get("POSTGRES_SCHEMA", "")})

    def max_position(self) -> int:
        from service.opening import open_app

        app = open_app(self.data, environ=self.environ)
        try:
            return app.max_position()
        finally:
            app.close()

    def cli(self, *args: str, in_process: bool = False) -> tuple[int, str]:
        """Run ``thirteen ARGS`` on this store: the real console script, or (fast, for the
        machine) its ``main`` in this process. Returns the status and the output."""
        if not in_process:
            done = subprocess.run(
                [str(SCRIPT), *args, "--data", str(self.data)],
                capture_output=True,
                text=True,
                timeout=180,
                env={**os.environ, **self.environ},
            )
            return done.returncode, done.stdout + done.stderr
        from service.entrypoints.cli import main

        out = io.StringIO()
        with (
            _environ(self.environ),
            contextlib.redirect_stdout(out),
            contextlib.redirect_stderr(out),
        ):
            status = main([*args, "--data", str(self.data)])
        return status, out.getvalue()


_ENVIRON_LOCK = threading.Lock()


@contextlib.contextmanager
def _environ(values: dict[str, str]) -> Iterator[None]:
    with _ENVIRON_LOCK:
        saved = {k: os.environ.get(k) for k in values}
        os.environ.update(values)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


class Checker:
    def __init__(
        self,
        model: Model,
        client: Client,
        figures: Figures,
        failures: Failures,
        store: Store,
        *,
        in_process_cli: bool = False,
    ) -> None:
        self.model = model
        self.client = client
        self.figures = figures
        self.failures = failures
        self.store = store
        self.in_process_cli = in_process_cli
        self.wallets: dict[str, int] = {}
        self.live: dict[str, list[Any]] | None = None

    def check(self, invariant: str, ok: bool, detail: str = "") -> bool:
        self.figures.add("invariants checked")
        if not ok:
            self.failures.add(invariant, detail)
        return ok

    # While the server runs ----------------------------------------------------------------

    def online(self) -> None:
        self.read_wallets()
        self.coins()
        self.rounds()
        self.transfers_answer_again()
        self.hostile_left_nothing()
        self.views_catch_up()

    def _call(self, service: str, method: str, request: Any, patience: float = 30.0) -> Any:
        return self.client.call(service, method, request, patience=patience)

    def read_wallets(self) -> None:
        for player in sorted(self.model.players):
            got = self._call(
                "wallets", "GetBalance", wallet_pb2.GetBalanceRequest(player_id=player)
            )
            if got.ok:
                self.wallets[player] = got.reply.balance
            elif got.code != NOT_FOUND:
                self.check("every wallet can be read", False, f"{player}: {got.code} {got.message}")

    def coins(self) -> None:
        total = sum(self.wallets.values())
        net = self.model.acknowledged_net()
        self.check(
            "coins are conserved: Σ balances = acknowledged credits − acknowledged debits",
            total == net,
            f"Σ balances {total}, acknowledged net {net} (difference {total - net:+d})",
        )
        for player, balance in self.wallets.items():
            self.check("nobody is negative", balance >= 0, f"{player}: {balance}")
        expected, unknown = self.model.expected_balances()
        for player, want in sorted(expected.items()):
            if player in unknown:
                continue
            got = self.wallets.get(player, 0)
            self.check(
                "each balance = its acknowledged transfers, settlements and escapes",
                got == want,
                f"{player}: wallet {got}, acknowledged {want} ({got - want:+d})",
            )

    def rounds(self) -> None:
        for seen in self.model.snapshot_rounds():
            got = self._call(
                "tables", "GetRound", table_pb2.GetRoundRequest(round_id=seen.round_id)
            )
            if not self.check(
                "every acknowledged deal exists", got.ok, f"{seen.round_id}: {got.message}"
            ):
                continue
            self._round(seen, got.reply)

    def _round(self, seen: RoundSeen, got: Any) -> None:
        phase = got.phase
        if seen.abandoned:
            self.check(
                "an abandoned round stays abandoned (R11.3)",
                phase == table_pb2.ROUND_PHASE_ABANDONED,
                f"{seen.round_id} is {table_pb2.RoundPhase.Name(phase)}",
            )
            return
        if seen.coins is None:
            self.check(
                "every round the clients know of was finished before the checks",
                False,
                f"{seen.round_id} is {table_pb2.RoundPhase.Name(phase)}",
            )
            return
        if not self.check(
            "an acknowledged reveal stays revealed",
            phase == table_pb2.ROUND_PHASE_REVEALED,
            f"{seen.round_id} is {table_pb2.RoundPhase.Name(phase)}",
        ):
            return
        coins = {p.player_id: p.coins for p in got.result.players}
        self.check(
            "a round's coins are those its Reveal acknowledged",
            coins == seen.coins,
            f"{seen.round_id}: now {coins}, acknowledged {seen.coins}",
        )
        self.check(
            "a round's coins sum to zero (R7.2)",
            sum(seen.coins.values()) == 0,
            f"{seen.round_id}: {seen.coins}",
        )
        for player in seen.result.players:
            arranged = seen.arranged.get(player.player_id)
            if arranged is None:
                continue
            maybe = seen.maybe_arranged.get(player.player_id, [])
            if isinstance(arranged, str):
                ok = player.special == arranged or (arranged == "any" and bool(player.special))
                shown: Any = player.special
            else:
                shown = (tuple(player.front), tuple(player.middle), tuple(player.back))
                ok = shown == arranged or bool(player.special) or shown in maybe
            self.check(
                "the showdown uses each player's last acknowledged arrangement (R4.3)",
                ok,
                f"{seen.round_id}/{player.player_id}: showdown {shown}, acknowledged {arranged}",
            )

    def transfers_answer_again(self) -> None:
        transfers = self.model.snapshot_transfers()
        step = max(1, len(transfers) // REPLAYED_TRANSFERS)
        for t in transfers[::step]:
            if t.kind == "credit":
                request: Any = wallet_pb2.CreditRequest(
                    player_id=t.player_id, amount=t.amount, transfer_id=t.transfer_id
                )
                got = self._call("wallets", "Credit", request)
            else:
                request = wallet_pb2.DebitRequest(
                    player_id=t.player_id, amount=t.amount, transfer_id=t.transfer_id
                )
                got = self._call("wallets", "Debit", request)
            self.check(
                "an acknowledged transfer sent again answers as before and moves nothing",
                got.ok and got.reply.balance == t.balance,
                f"{t.kind} {t.transfer_id}: first answer balance {t.balance}, now "
                + (f"balance {got.reply.balance}" if got.ok else f"{got.code} {got.message}"),
            )
        after = {}
        for player in sorted(self.wallets):
            got = self._call(
                "wallets", "GetBalance", wallet_pb2.GetBalanceRequest(player_id=player)
            )
            if got.ok:
                after[player] = got.reply.balance
        moved = {p: (b, after.get(p)) for p, b in self.wallets.items() if after.get(p) != b}
        self.check("sending transfers again moves no coins", not moved, f"{moved}")

    def hostile_left_nothing(self) -> None:
        for player in sorted(self.model.hostile_players):
            got = self._call(
                "wallets", "GetBalance", wallet_pb2.GetBalanceRequest(player_id=player)
            )
            self.check(
                "a refused hostile call creates no wallet",
                got.code in (NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT),
                f"{player[:40]!r}: " + (f"balance {got.reply.balance}" if got.ok else got.message),
            )
        for table in sorted(self.model.hostile_tables):
            got = self._call("tables", "GetTable", table_pb2.GetTableRequest(table_id=table))
            self.check(
                "a refused hostile call opens no table",
                got.code in (NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT),
                f"{table[:40]!r}: " + ("exists" if got.ok else got.message),
            )

    def views_catch_up(self) -> None:
        """The views reach the wallets: a ledger balance per player equal to the wallet."""
        deadline = time.monotonic() + VIEWS_TIMEOUT
        behind: dict[str, tuple[int, int]] = {}
        while True:
            behind = {}
            for player, balance in self.wallets.items():
                request = results_pb2.GetPlayerStatsRequest(player_id=player)
                got = self._call("results", "GetPlayerStats", request, patience=2.0)
                if got.ok and got.reply.balance != balance:
                    behind[player] = (got.reply.balance, balance)
            if not behind or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if not self.check(
            "every ledger equals its wallet (the views catch up)",
            not behind,
            f"{len(behind)} of {len(self.wallets)} players differ after {VIEWS_TIMEOUT:.0f} s "
            f"(ledger, wallet): {dict(list(behind.items())[:5])}",
        ):
            return  # the results view is behind as well; the offline checks say where
        for seen in [s for s in self.model.snapshot_rounds() if s.coins is not None][:40]:
            asked = results_pb2.GetRoundResultRequest(round_id=seen.round_id)
            got = self._call("results", "GetRoundResult", asked, patience=8.0)
            self.check(
                "the results view shows what Reveal acknowledged",
                got.ok
                and list(got.reply.players) == list(seen.result.players)
                and got.reply.server_seed == seen.result.server_seed,
                f"{seen.round_id}: "
                + ("differs" if got.ok else f"{got.code.name if got.code else ''} {got.message}"),
            )

    # After the server stopped -------------------------------------------------------------

    def offline(self, server: Any) -> None:
        self.stopped_cleanly(server)
        self.logs(server.records())
        self.views_directly()
        self.audit()
        self.rebuild()

    def stopped_cleanly(self, server: Any) -> None:
        for how, status in server.exit_codes:
            if how == "graceful":
                self.check("a graceful stop exits with status 0", status == 0, f"status {status}")

    def logs(self, records: list[dict[str, Any]]) -> None:
        problems: Counter[str] = Counter()
        echoes = 0
        for record in _with_tracebacks(records):
            event = str(record.get("event", ""))
            level = str(record.get("level") or record.get("log_level") or "")
            text = str(record.get("exception") or record.get("raw") or "")
            if (
                event not in BAD_EVENTS
                and level not in ("error", "critical")
                and not ("raw" in record and "Traceback" in text)
            ):
                continue
            if FAULT_ECHOES.search(text):
                echoes += 1
                continue
            last = [line for line in text.strip().splitlines() if line.strip()][-1:] or [""]
            problems[f"{event or 'traceback'}: {last[0].strip()[:200]}"] += 1
        if echoes:
            self.figures.add("errors logged for cut PostgreSQL sessions", echoes)
        self.check(
            "the server logs no projector, listener or RPC error and no traceback",
            not problems,
            "; ".join(f"{n}× {p}" for p, n in problems.most_common(8)),
        )

    def views_directly(self) -> None:
        views = self.store.views()
        try:
            self._views(views)
            self.live = views.dump()
        finally:
            views.close()

    def _views(self, views: ViewStore) -> None:
        head = self.store.max_position()
        self.check(
            "the views reach the end of the log",
            views.position() == head,
            f"views at {views.position()}, log at {head}",
        )
        unbalanced = views.unbalanced_journals()
        self.check("every journal balances", not unbalanced, f"transactions {unbalanced[:10]}")
        settlements: dict[str, dict[str, int]] = {}
        counts: Counter[str] = Counter()
        rows = views._query(
            "SELECT j.txn_id, j.round_id, l.account, l.amount FROM {p}journal j "
            "JOIN {p}legs l ON l.txn_id = j.txn_id WHERE j.kind = 'settlement'"
        )
        seen_txn: dict[str, set[int]] = {}
        for txn, round_id, account, amount in rows:
            seen_txn.setdefault(round_id, set()).add(int(txn))
            settlements.setdefault(round_id, {})[account] = int(amount)
        counts.update({r: len(t) for r, t in seen_txn.items()})
        revealed = {s.round_id: s for s in self.model.snapshot_rounds() if s.coins is not None}
        for round_id, seen in revealed.items():
            self.check(
                "exactly one settlement per revealed round",
                counts.get(round_id) == 1,
                f"{round_id}: {counts.get(round_id, 0)} settlements",
            )
            self.check(
                "a settlement moves the coins Reveal acknowledged",
                settlements.get(round_id) == seen.coins or counts.get(round_id) != 1,
                f"{round_id}: journal {settlements.get(round_id)}, acknowledged {seen.coins}",
            )
        extra = sorted(set(counts) - set(revealed))
        self.check("no settlement for a round that was not revealed", not extra, f"{extra[:5]}")
        ledger = views._query(
            "SELECT j.transfer_id, j.kind, l.account, l.amount FROM {p}journal j "
            "JOIN {p}legs l ON l.txn_id = j.txn_id WHERE j.kind IN ('credit', 'debit') "
            "AND l.account <> ?",
            (EXTERNAL,),
        )
        found = {str(t): (k, a, int(m)) for t, k, a, m in ledger}
        acked = {
            t.transfer_id: (t.kind, t.player_id, t.amount if t.kind == "credit" else -t.amount)
            for t in self.model.snapshot_transfers()
        }
        missing = sorted(set(acked) - set(found))
        self.check("every acknowledged transfer is in the ledger", not missing, f"{missing[:5]}")
        wrong = [t for t in acked if t in found and found[t] != acked[t]]
        self.check(
            "every ledger transfer moves what was acknowledged",
            not wrong,
            "; ".join(f"{t}: ledger {found[t]}, acknowledged {acked[t]}" for t in wrong[:5]),
        )
        refused = set(self.model.refused_transfers) | set(self.model.hostile_transfers)
        traces = sorted(refused & set(found))
        self.check("a refused transfer leaves no trace", not traces, f"{traces[:5]}")
        unknown = sorted(set(found) - set(acked) - refused)
        self.check(
            "the ledger holds no transfer that no client was told of",
            not unknown,
            f"{unknown[:5]}",
        )
        negative = views._query(
            "SELECT account, txn_id, balance_after FROM {p}legs WHERE balance_after < 0 "
            "AND account <> ?",
            (EXTERNAL,),
        )
        self.check("no ledger balance is ever negative", not negative, f"{negative[:5]}")
        differs = {
            p: (views.balance(p), b) for p, b in self.wallets.items() if views.balance(p) != b
        }
        self.check(
            "every ledger account equals its wallet", not differs, f"{list(differs.items())[:5]}"
        )
        players = views._query(
            "SELECT account, balance FROM {p}accounts WHERE account <> ?", (EXTERNAL,)
        )
        external = views.balance(EXTERNAL) or 0
        self.check(
            "the external account mirrors every player's coins",
            external == -sum(int(b) for _, b in players),
            f"external {external}, players {sum(int(b) for _, b in players)}",
        )
        outcomes = dict(views._query("SELECT round_id, outcome FROM {p}rounds"))
        for seen in self.model.snapshot_rounds():
            want = "revealed" if seen.coins is not None else "abandoned" if seen.abandoned else None
            if want is not None:
                self.check(
                    "the results view has every finished round with its outcome",
                    outcomes.get(seen.round_id) == want,
                    f"{seen.round_id}: view {outcomes.get(seen.round_id)}, acknowledged {want}",
                )

    def audit(self) -> None:
        status, output = self.store.cli("audit", "--all", in_process=self.in_process_cli)
        failed = [line for line in output.splitlines() if "FAIL" in line]
        self.check(
            "thirteen audit --all passes",
            status == 0,
            f"status {status}: "
            + " | ".join(failed[:6] or output.strip().splitlines()[-3:])
            + (f" (+{len(failed) - 6} more FAIL lines)" if len(failed) > 6 else ""),
        )

    def rebuild(self) -> None:
        status, output = self.store.cli("projections", "rebuild", in_process=self.in_process_cli)
        if not self.check(
            "thirteen projections rebuild succeeds", status == 0, output.strip()[-300:]
        ):
            return
        views = self.store.views()
        try:
            rebuilt = views.dump()
        finally:
            views.close()
        live = self.live or {}
        differ = [t for t in rebuilt if rebuilt[t] != live.get(t)]
        detail = ", ".join(
            f"{t}: live {len(live.get(t, []))} rows, rebuilt {len(rebuilt[t])}" for t in differ
        )
        self.check("a rebuild of the views equals the live views", not differ, detail)


def _with_tracebacks(records: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Records as they are, except that a plain-text traceback (from a thread that died
    outside the logger) is joined into one ``raw`` record."""
    pending: list[str] = []
    for record in records:
        raw = record.get("raw")
        if raw is None:
            if pending:
                yield {"raw": "\n".join(pending)}
                pending = []
            yield record
            continue
        if raw.startswith("Traceback") or raw.startswith("Exception in thread"):
            if pending:
                yield {"raw": "\n".join(pending)}
            pending = [raw]
        elif pending:
            pending.append(raw)
            if not raw.startswith((" ", "\t")) and not raw.startswith("Traceback"):
                yield {"raw": "\n".join(pending)}
                pending = []
        else:
            yield record
    if pending:
        yield {"raw": "\n".join(pending)}
