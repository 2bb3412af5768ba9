"""The console's list pages and error page: the search form, a player's recall list, a table's
rounds. Each returns a page body; ``markup.page`` frames it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC

from google.protobuf.timestamp_pb2 import Timestamp

from service._generated.thirteen.v1 import results_pb2, wallet_pb2
from service.report.figures import signed
from service.report.html_labels import e
from service.report.html_sections import tone
from service.web.backend import ServiceError
from service.web.labels import Words
from service.web.markup import anchor, link, mini_cards, when

NUMERIC = ("points", "coins", "balance_before", "balance_after", "base")
"""Columns aligned right."""


def _moment(stamp: Timestamp) -> str:
    return when(stamp.ToDatetime(tzinfo=UTC)) if stamp.seconds else "–"


def _num(value: int, signed_: bool = True) -> str:
    text = signed(value) if signed_ else str(value)
    css = f"num {tone(value)}" if signed_ else "num"
    return f'<td class="{css}">{e(text)}</td>'


def search(words: Words, problem: str = "") -> str:
    """Three forms, one per kind of id; each asks ``/search``, which redirects."""
    forms = "".join(
        f'<form class="find" method="get" action="/search"><label for="{name}">'
        f"{e(words(label))}</label>"
        f'<input id="{name}" name="{name}" maxlength="128" required autocomplete="off">'
        f'<button type="submit">{e(words(button))}</button></form>'
        for name, label, button in (
            ("round", "round_id", "open_round"),
            ("player", "player_id", "open_player"),
            ("table", "table_id", "open_table"),
        )
    )
    said = f'<p class="note">{e(problem)}</p>' if problem else ""
    return f'<h1>{e(words("search_title"))}</h1><section id="search">{said}{forms}</section>'


def _pager(words: Words, path: str, id_: str, token: str, following: str) -> str:
    found = []
    if token:
        found.append(anchor(link(path, id_), words("first_page")))
    if following:
        found.append(anchor(link(path, id_, page=following), words("older") + " →", "next"))
    return f'<div class="pager">{"".join(found)}</div>' if found else ""


def _outcome(words: Words, played: results_pb2.PlayerRound) -> str:
    said = [e(words("revealed" if played.outcome == "revealed" else "abandoned"))]
    if played.escaped:
        said.append(f'<span class="badge escaped">{e(words("escaped"))}</span>')
    if played.foul and not played.escaped:
        said.append(f'<span class="badge foul">{e(words("foul"))}</span>')
    if played.special:
        said.append(f'<span class="badge special">{e(played.special)}</span>')
    return " ".join(said)


def _balance(words: Words, balance: wallet_pb2.GetBalanceResponse | ServiceError) -> str:
    if isinstance(balance, ServiceError):  # the recall list stands without it
        if balance.status == 403:
            return e(words("balance_needs", roles=", ".join(balance.allowed)))
        return e(balance.message)
    found = [f"<b>{balance.balance}</b>"]
    if balance.table_id:
        table = anchor(link("/tables", balance.table_id), balance.table_id, "id")
        found.append(f"{e(words('seated_at'))} {table}")
    if balance.round_id:
        found.append(f'{e(words("in_round"))} <span class="id">{e(balance.round_id)}</span>')
    return " · ".join(found)


def player(
    words: Words,
    player_id: str,
    page: results_pb2.ListPlayerRoundsResponse,
    balance: wallet_pb2.GetBalanceResponse | ServiceError,
    token: str,
) -> str:
    """A player's recall list: the rounds that are over, newest first, as the service pages
    them, with the hand as played and the balance before and after each."""
    head = "".join(
        f"<th{' class=num' if k in NUMERIC else ''}>{e(words(k))}</th>"
        for k in (
            "ended",
            "round",
            "table",
            "seat",
            "outcome",
            "play",
            "points",
            "coins",
            "balance_before",
            "balance_after",
        )
    )
    rows = []
    for played in page.rounds:
        piles: Sequence[Sequence[str]] = (
            (played.front, played.middle, played.back) if played.front else (played.cards,)
        )
        rows.append(
            f'<tr class="recall"><td>{e(_moment(played.ended_at))}</td>'
            f"<td>{anchor(link('/rounds', played.round_id), played.round_id, 'id')}</td>"
            f"<td>{anchor(link('/tables', played.table_id), played.table_id, 'id')} "
            f'<span class="sub">#{played.number}</span></td>'
            f"<td>{played.seat}</td><td>{_outcome(words, played)}</td>"
            f"<td>{mini_cards(*piles)}</td>"
            f"{_num(played.points)}{_num(played.coins)}"
            f"{_num(played.balance_before, False)}{_num(played.balance_after, False)}</tr>"
        )
    listing = (
        f'<table class="list"><tr>{head}</tr>{"".join(rows)}</table>'
        if rows
        else f"<p>{e(words('no_rounds'))}</p>"
    )
    return (
        f'<h1>{e(words("player_id"))} <span class="id">{e(player_id)}</span></h1>'
        f'<p class="sub">{e(words("balance_now"))}: {_balance(words, balance)}</p>'
        f'<section id="recall"><h2>{e(words("recall"))}</h2>{listing}'
        f"{_pager(words, '/players', player_id, token, page.next_page_token)}</section>"
    )


def table(
    words: Words, table_id: str, page: results_pb2.ListRoundResultsResponse, token: str
) -> str:
    """A table's rounds that are over, in the order played, with each player's result."""
    head = "".join(
        f"<th{' class=num' if k in NUMERIC else ''}>{e(words(k))}</th>"
        for k in ("number", "round", "ended", "outcome", "base", "players")
    )
    rows = []
    for found in page.rounds:
        results = ", ".join(
            f"{anchor(link('/players', p.player_id), p.player_id)} "
            f'<span class="{tone(p.coins)}">{e(signed(p.points))} / {e(signed(p.coins))}</span>'
            for p in found.result.players
        )
        outcome = "revealed" if found.outcome == "revealed" else "abandoned"
        rows.append(
            f'<tr class="table-round"><td>{found.number}</td>'
            f"<td>{anchor(link('/rounds', found.round_id), found.round_id, 'id')}</td>"
            f"<td>{e(_moment(found.ended_at))}</td><td>{e(words(outcome))}</td>"
            f"{_num(found.base_stake, False)}<td>{results}</td></tr>"
        )
    listing = (
        f'<table class="list"><tr>{head}</tr>{"".join(rows)}</table>'
        if rows
        else f"<p>{e(words('no_rounds'))}</p>"
    )
    return (
        f'<h1>{e(words("table_id"))} <span class="id">{e(table_id)}</span></h1>'
        f'<section id="rounds"><h2>{e(words("table_rounds"))}</h2>'
        f'<p class="hint">{e(words("players"))}: {e(words("points"))} / {e(words("coins"))}</p>'
        f"{listing}{_pager(words, '/tables', table_id, token, page.next_page_token)}</section>"
    )


def error(
    words: Words, status: int, message: str, role: str = "", allowed: Sequence[str] = ()
) -> str:
    """What went wrong, in one sentence (and the role the console lacks), and the way back."""
    key = f"error_{status}"
    title = words(key) if key in _KNOWN else words("error_500")
    said = [f"<p>{e(message)}</p>"]
    if role:
        roles = ", ".join(allowed or (role,))
        said.append(f'<p class="role">{e(words("missing_role", role=role, roles=roles))}</p>')
    return (
        f'<section class="error"><h1>{status} · {e(title)}</h1>{"".join(said)}'
        f"<p>{anchor('/', words('back_to_search'))}</p></section>"
    )


_KNOWN = {f"error_{s}" for s in (400, 403, 404, 405, 409, 421, 500, 501, 502, 503, 504)}
