"""``thirteen replay``: a round's events in order, each with the round's state after it.

The state is the ``Round`` aggregate folded over the stored events one at a time
(``event.mutate``), so what is shown is exactly what the service itself rebuilds. While a round
is in progress nothing that depends on a player's cards leaves this module: not the hands, not
the piles, not a foul reason nor a declared special — only who has submitted, as the public
``GetRound`` shows it. Once the round is over (R10.4) everything is shown. The replay is an
observer's: what it shows is what ``domain.visibility`` lets an observer see.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from domain import visibility
from domain.dealing import undealt_cards as dealt_to_no_one
from domain.fairness.shuffle import effective_client_seed, in_seat_order
from domain.ids import round_uuid, wallet_uuid
from domain.round import Round
from domain.rules.cards import format_cards
from domain.rules.specials import Special
from domain.tlog.chain import CHAIN, StoredRecord
from service.application import Thirteen
from service.caller import CALLER_FIELD, UNKNOWN, recorded
from service.errors import NotFound
from service.evidence import Decoder, record_of
from service.report.figures import signed

HIDDEN = "hidden until the round is over"


@dataclass(frozen=True)
class Step:
    """One stored event of the round and the round's state right after it."""

    event: dict[str, Any]
    state: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"event": self.event, "state": self.state}


def round_events(app: Thirteen, round_id: str) -> list[tuple[StoredRecord, Any]]:
    """The round's stored records with their decoded domain events, in version order (the
    round's stream only: no wallet or table is read). Raises ``NotFound`` for an unknown
    round."""
    stored = app.recorder.select_events(round_uuid(round_id))
    if not stored:
        raise NotFound(f"round {round_id!r} does not exist")
    decoder = Decoder()
    records = [record_of(0, s) for s in stored]  # 0: positions are not read by stream
    return [(record, decoder.event(record)) for record in records]


def fold(events: Sequence[Any]) -> Round:
    """The round as the service rebuilds it: each event mutates the previous state."""
    round_: Any = None
    for event in events:
        round_ = event.mutate(round_)
    assert isinstance(round_, Round)
    return round_


def steps(events: Sequence[tuple[StoredRecord, Any]]) -> list[Step]:
    """Every event with the state after it. Whether details are shown is decided by the end
    state of the whole round, so the first events of a finished round show its hands too."""
    final = fold([e for _, e in events])
    found = []
    round_: Any = None
    for record, event in events:
        round_ = event.mutate(round_)
        found.append(Step(_event(record, event, final), _state(round_, final)))
    return found


def undealt_cards(round_: Round) -> tuple[str, ...]:
    """R14.2.4: the shuffled deck's positions past the hands, which the reveal publishes with
    them (``domain.dealing.undealt_cards``, as the API answers them); none before the server
    seed is revealed, and none under a ruleset of R13 alone (``standard``, ``fujian``), whose
    reports stay as they always were."""
    if round_.server_seed is None:
        return ()
    try:
        rest = dealt_to_no_one(round_)
    except ValueError:  # a seed that is not hex, or no deal gives these seats: the proof says
        return ()
    return tuple(format_cards(rest))


def _time(at: datetime) -> str:
    return at.isoformat()


def _event(record: StoredRecord, event: Any, final: Round) -> dict[str, Any]:
    kind = type(event).__name__
    who = getattr(event, "player_id", None)  # None: the service (deal, reveal, abandon)
    details: dict[str, Any] = {}
    if isinstance(event, Round.Dealt):
        details = _dealt(event, final)
    elif isinstance(event, Round.Arranged | Round.SpecialDeclared):
        if visibility.sees_submission(final, visibility.OBSERVER, event.player_id):
            details = {"front": event.front, "middle": event.middle, "back": event.back}
            if isinstance(event, Round.Arranged):
                details["foul_reason"] = event.foul_reason
            else:
                details["declared"] = event.declared
                details["special"] = event.special
        else:
            details = {"hidden": HIDDEN}
    elif isinstance(event, Round.PlayerEscaped):
        details = {"transfers": dict(event.transfers)}
    elif isinstance(event, Round.Revealed):
        details = {
            "server_seed": event.server_seed,
            "points": dict(event.points),
            "coins": dict(event.coins),
        }
        rest = undealt_cards(final)
        if rest:  # R14.2.4: published with the hands
            details["undealt"] = list(rest)
    elif isinstance(event, Round.Abandoned):
        details = {"server_seed": event.server_seed}
    return {
        "version": record.version,
        "type": kind,
        "at": _time(event.at),
        "who": who,
        "caller": recorded(event),  # whose call stored it; "unknown" if stored before it was kept
        "details": details,
    }


def _dealt(event: Round.Dealt, final: Round) -> dict[str, Any]:
    """A deal's details: the table, the players, the commitment and seeds, and the hands once
    an observer may see them (the end state of the round decides)."""
    details: dict[str, Any] = {
        "table_id": event.table_id,
        "number": event.number,
        "players": list(event.players),
        "commitment": event.commitment,
        "client_seed": event.client_seed,
        "base_stake": event.base_stake,
        "balances": dict(event.balances),
        "ruleset": event.ruleset.get("name", ""),
        "deadline": _time(event.deadline),
    }
    if event.player_seeds:  # R12.8; a deal without them reads as it always did
        details["player_seeds"] = dict(event.player_seeds)
        details["effective_client_seed"] = effective_client_seed(
            event.client_seed, in_seat_order(event.players, event.player_seeds)
        )
    shown = visibility.visible_hands(final, visibility.OBSERVER)
    if shown:
        details["hands"] = {p: list(event.hands[p]) for p in shown}
        horse = final.ruleset.horse_card
        if horse is not None:  # R14.1.2: who holds it, from the cards dealt
            details["horse_card"] = str(horse)
            details["horse_holders"] = [
                p for p in shown if final.ruleset.holds_horse(final.hand(p))
            ]
    return details


def _status(round_: Round, player: str, shown: bool) -> dict[str, Any]:
    """A player's status: dealt, arranged, foul draft (foul at the showdown, R4.3), special,
    escaped; while their submission is hidden only dealt, submitted or escaped."""
    if player in round_.escaped:
        return {"status": "escaped"}
    submission = round_.submissions.get(player)
    if submission is None:
        if round_.revealed:
            return {"status": "foul", "foul_reason": "no arrangement"}
        return {"status": "dealt"}
    if not shown:
        return {"status": "submitted"}
    if "special" in submission:
        return {
            "status": "special",
            "special": submission["special"],
            "declared": submission["declared"],
        }
    reason = submission.get("foul_reason")
    if reason:
        return {"status": "foul" if round_.revealed else "foul draft", "foul_reason": reason}
    return {"status": "arranged"}


def _state(round_: Round, final: Round) -> dict[str, Any]:
    players = []
    for seat, player in enumerate(round_.players):
        escape = sum(t.get(player, 0) for t in round_.escaped.values())
        shown = visibility.sees_submission(final, visibility.OBSERVER, player)
        entry: dict[str, Any] = {
            "player_id": player,
            "seat": seat,
            "balance_at_deal": round_.balances[player],
            **_status(round_, player, shown),
            "escape_coins": escape,
        }
        if round_.revealed and player in round_.points:
            entry["points"] = round_.points[player]
            entry["coins"] = round_.coins[player]
        players.append(entry)
    return {
        "phase": round_.phase,
        "base_stake": round_.base_stake,
        "commitment": round_.commitment,
        "server_seed": round_.server_seed,
        "escapes": {p: dict(t) for p, t in round_.escaped.items()},
        "players": players,
    }


# --- text -----------------------------------------------------------------------------------


def _event_line(event: dict[str, Any]) -> str:
    who = event["who"]
    by = "by the service" if who is None else f"by {who}"
    called = "" if event["caller"] == UNKNOWN else f", called by {event['caller']}"
    return f"v{event['version']:<3} {event['at']}  {event['type']} {by}{called}"


def _detail_lines(event: dict[str, Any]) -> list[str]:
    d = event["details"]
    kind = event["type"]
    if kind == "Dealt":
        lines = [
            f"table {d['table_id']}, round {d['number']} of the table, "
            f"{len(d['players'])} players, base {d['base_stake']} (ruleset {d['ruleset']})",
            f"commitment {d['commitment']}, client seed {json.dumps(d['client_seed'])}",
            f"arrange by {d['deadline']}; balances at the deal: "
            + ", ".join(f"{p} {b}" for p, b in d["balances"].items()),
        ]
        if "player_seeds" in d:
            lines += [
                "player seeds (R12.8): "
                + ", ".join(
                    f"{p} {json.dumps(s, ensure_ascii=False)}" for p, s in d["player_seeds"].items()
                ),
                f"dealt with the client seed {json.dumps(d['effective_client_seed'])} "
                "(the client seed and the player seeds mixed, R12.8)",
            ]
        if "hands" in d:
            horse = d.get("horse_card")
            lines += [
                f"{p}: " + " ".join(f"[{c}]" if c == horse else c for c in h)
                for p, h in d["hands"].items()
            ]
            if horse is not None:
                held = ", ".join(d["horse_holders"]) or "no one"
                lines.append(f"horse card 马牌 [{horse}] (R14.1.2): held by {held}")
        else:
            lines.append(f"hands: {HIDDEN}")
        return lines
    if kind in ("Arranged", "SpecialDeclared"):
        if "hidden" in d:
            return [f"submission: {HIDDEN}"]
        piles = " | ".join(" ".join(d[p]) for p in ("front", "middle", "back") if d[p])
        if kind == "SpecialDeclared":
            name = f"{d['special']} {Special.from_id(d['special']).chinese}"
            return [f"declared {d['declared']!r}: {name}" + (f"  {piles}" if piles else "")]
        reason = f"  FOUL: {d['foul_reason']}" if d["foul_reason"] else ""
        return [piles + reason]
    if kind == "PlayerEscaped":
        return [
            "escape transfers (R11): "
            + ", ".join(f"{p} {signed(c)}" for p, c in d["transfers"].items())
        ]
    if kind in ("Revealed", "Abandoned"):
        lines = [f"server seed published: {d['server_seed']}"]
        if "undealt" in d:
            lines.append(f"undealt ({len(d['undealt'])} cards, R14.2.4): {' '.join(d['undealt'])}")
        return lines
    return []


def _player_line(entry: dict[str, Any], width: int, marked: bool) -> str:
    status = entry["status"]
    if entry.get("foul_reason"):
        status += f" ({entry['foul_reason']})"
    if entry.get("special"):
        chinese = Special.from_id(entry["special"]).chinese
        status += f" {entry['special']} {chinese} (declared {entry['declared']!r})"
    if "points" in entry:
        status += f"; points {signed(entry['points'])}, coins {signed(entry['coins'])}"
    if entry["escape_coins"]:
        status += f"; escape coins {signed(entry['escape_coins'])}"
    mark = "*" if marked else " "
    return f"{mark} {entry['player_id']:<{width}}  {status}"


def render_text(round_id: str, found: Sequence[Step]) -> str:
    """The steps for people: each event, then the phase and every player's status after it
    (``*`` marks the player the event is about)."""
    lines = [f"round {round_id}: {len(found)} events"]
    if found and found[-1].state["phase"] == "dealt":
        lines.append(f"the round is in progress: cards and submissions are {HIDDEN}")
    for step in found:
        lines.append("")
        lines.append(_event_line(step.event))
        lines += [f"      {text}" for text in _detail_lines(step.event)]
        state = step.state
        seed = f", server seed {state['server_seed']}" if state["server_seed"] else ""
        lines.append(f"    phase {state['phase']}{seed}")
        width = max(len(p["player_id"]) for p in state["players"])
        for entry in state["players"]:
            marked = entry["player_id"] == step.event["who"]
            lines.append("    " + _player_line(entry, width, marked))
    return "\n".join(lines) + "\n"


def render_json(found: Sequence[Step]) -> str:
    return json.dumps([s.to_dict() for s in found], ensure_ascii=False, indent=2) + "\n"


# --- a wallet ---------------------------------------------------------------------------------


def wallet_events(app: Thirteen, player_id: str) -> list[dict[str, Any]]:
    """A player's wallet events in order (credits, debits, seats, rounds, settlements), each with
    the identity whose call stored it. Raises ``NotFound`` for a player without a wallet."""
    stored = app.recorder.select_events(wallet_uuid(player_id))
    if not stored:
        raise NotFound(f"player {player_id!r} has no wallet")
    decoder = Decoder()
    found = []
    for record in (record_of(0, s) for s in stored):
        event = decoder.event(record)
        details = {
            k: v
            for k, v in record.state.items()
            if k not in ("player_id", "timestamp", CHAIN, CALLER_FIELD, "originator_topic")
        }
        found.append(
            {
                "version": record.version,
                "type": type(event).__name__,
                "at": _time(event.timestamp),
                "caller": recorded(event),
                "details": details,
            }
        )
    return found


def render_wallet_text(player_id: str, moves: Sequence[dict[str, Any]]) -> str:
    """The wallet's events for people: one line each, with who called."""
    lines = [f"wallet of {player_id}: {len(moves)} events"]
    for move in moves:
        details = ", ".join(f"{k} {v}" for k, v in move["details"].items())
        lines.append(
            f"v{move['version']:<3} {move['at']}  {move['type']}"
            + (f" ({details})" if details else "")
            + f", called by {move['caller']}"
        )
    return "\n".join(lines) + "\n"
