"""``thirteen explain --html``: the dispute report as one self-contained HTML page.

Inline CSS only: no scripts, no fonts, no images, no links to anything, so the page can be
mailed or attached to a support ticket and shows the same everywhere. Every piece of text from
the record (player ids are user input) goes through ``html.escape``.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from domain.cards import RANKS, SYMBOL_OF_SUIT, parse_card
from service.tools.explain import PairView, PlayerView, Report
from service.tools.explain_words import (
    multiplier_words,
    overall_sentence,
    pair_sentences,
    phase_words,
    ruleset_lines,
    settlement_note,
    signed,
)

CSS = """
:root { --ink: #1d2430; --muted: #5d6675; --felt: #1d6b41; --felt-dark: #134a2c;
  --red: #c62828; --win: #1b7f3b; --lose: #b3261e; --line: #d9ded6; }
* { box-sizing: border-box; }
body { margin: 0; background: #eef1ec; color: var(--ink);
  font: 15px/1.45 "DejaVu Sans", "Segoe UI", Helvetica, Arial, sans-serif; }
header { background: linear-gradient(var(--felt), var(--felt-dark)); color: #fff;
  padding: 18px 32px 16px; }
header h1 { margin: 0 0 6px; font-size: 24px; }
header .meta { display: flex; flex-wrap: wrap; gap: 8px; }
.chip { background: rgba(255,255,255,.16); border-radius: 999px; padding: 2px 10px;
  font-size: 13px; }
main { max-width: 1220px; margin: 0 auto; padding: 4px 24px 24px; }
section { background: #fff; border-radius: 10px; box-shadow: 0 1px 3px rgba(0,0,0,.14);
  padding: 14px 20px 16px; margin: 16px 0; }
h2 { font-size: 18px; margin: 0 0 10px; }
.status { font-weight: 600; }
.status.hidden { color: var(--lose); }
.note { background: #fff4e5; border-left: 4px solid #f0a030; padding: 6px 10px; margin: 6px 0; }
.rules { color: var(--muted); font-size: 13px; margin: 6px 0 0; padding-left: 18px; }
.view { border: 2px solid var(--felt); }
.view .overall { font-size: 16px; font-weight: 600; }
.view ul { margin: 6px 0; padding-left: 20px; }
.players { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 14px; }
.player { border: 1px solid var(--line); border-radius: 10px; overflow: hidden;
  display: flex; flex-direction: column; }
.player .felt { flex: 1; }
.player.me { border: 2px solid #f0a030; }
.player .top { display: flex; justify-content: space-between; align-items: baseline;
  padding: 8px 12px; background: #f7f9f6; gap: 8px; }
.player .name { font-weight: 700; font-size: 16px; overflow-wrap: anywhere; }
.player .sub { color: var(--muted); font-size: 12px; }
.badge { display: inline-block; border-radius: 6px; padding: 1px 7px; font-size: 12px;
  font-weight: 700; color: #fff; background: var(--muted); margin-left: 6px; }
.badge.foul { background: var(--lose); }
.badge.special { background: #7b3fa0; }
.badge.escaped { background: #8a6d1d; }
.felt { background: var(--felt); padding: 8px 12px 10px; color: #eaf6ee; }
.row { display: flex; align-items: center; gap: 10px; margin: 4px 0; }
.row .label { width: 58px; font-size: 12px; text-transform: uppercase; letter-spacing: .06em;
  opacity: .85; }
.row .words { font-size: 13px; }
.cards { display: flex; gap: 4px; }
.cards.fan { gap: 0; }
.cards.fan .card + .card { margin-left: -8px; }
.cards.fan .back + .back { margin-left: -24px; }
.card { width: 38px; height: 54px; background: #fff; border: 1px solid #8d949c;
  border-radius: 5px; box-shadow: 0 1px 2px rgba(0,0,0,.35); color: #16181d;
  display: flex; flex-direction: column; justify-content: space-between;
  padding: 2px 4px; font-weight: 700; line-height: 1; }
.card .r { font-size: 15px; }
.card .s { font-size: 24px; align-self: center; margin-bottom: 4px; }
.card.red { color: var(--red); }
.card.back { background: repeating-linear-gradient(45deg, #8b1e3f 0 4px, #a83250 4px 8px);
  border-color: #5a1229; }
.reason { padding: 6px 12px; font-size: 13px; color: var(--lose); }
.pairs { display: grid; grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 12px;
  align-items: start; }
.pair { border: 1px solid var(--line); border-radius: 8px; padding: 8px 12px; }
.pair h3 { margin: 0 0 4px; font-size: 15px; display: flex; justify-content: space-between;
  gap: 8px; }
.pair table { width: 100%; border-collapse: collapse; font-size: 13px; margin: 4px 0; }
.pair td, .pair th { padding: 2px 4px; border-bottom: 1px solid #eef0ec; text-align: left; }
.pair .said { color: var(--muted); font-size: 12px; margin: 4px 0 0; padding-left: 16px; }
.win { color: var(--win); font-weight: 700; }
.lose { color: var(--lose); font-weight: 700; }
.even { color: var(--muted); font-weight: 700; }
table.coins { border-collapse: collapse; width: 100%; font-size: 14px; }
table.coins th, table.coins td { padding: 5px 8px; border-bottom: 1px solid var(--line);
  text-align: right; }
table.coins th:first-child, table.coins td:first-child { text-align: left; }
.proof dt { font-weight: 600; margin-top: 6px; }
.proof dd { margin: 0 0 0 12px; overflow-wrap: anywhere; }
.proof code { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: 13px; }
.score { white-space: nowrap; font-weight: 600; }
.ok { color: var(--win); font-weight: 700; }
.bad { color: var(--lose); font-weight: 700; }
"""


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _tone(value: int) -> str:
    return "win" if value > 0 else "lose" if value < 0 else "even"


def card(text: str) -> str:
    """One card as a box: rank in the corner, the suit large; red suits red."""
    c = parse_card(text)
    rank = "10" if RANKS[c.rank] == "T" else RANKS[c.rank]
    suit = SYMBOL_OF_SUIT[str(c)[1]]
    red = " red" if c.is_red else ""
    return (
        f'<span class="card{red}" title="{_e(c.symbol())}">'
        f'<span class="r">{rank}</span><span class="s">{suit}</span></span>'
    )


def cards(texts: Sequence[str], fan: bool = False) -> str:
    """A pile side by side, or a whole hand fanned (overlapping, ranks still in view)."""
    kind = "cards fan" if fan else "cards"
    return f'<span class="{kind}">' + "".join(card(t) for t in texts) + "</span>"


def _backs(count: int) -> str:
    return '<span class="cards fan">' + '<span class="card back"></span>' * count + "</span>"


def _badges(view: PlayerView) -> str:
    found = []
    if view.escaped:
        found.append('<span class="badge escaped">escaped</span>')
    if view.special is not None:
        found.append(f'<span class="badge special">{_e(view.special.id)}</span>')
    if view.foul_reason and not view.escaped:
        found.append('<span class="badge foul">FOUL</span>')
    return "".join(found)


def _player(view: PlayerView, me: str | None) -> str:
    score = ""
    if view.points is not None:
        score = (
            f'<span class="{_tone(view.points)}">{_e(signed(view.points))} pts</span> · '
            f'<span class="{_tone(view.coins or 0)}">{_e(signed(view.coins or 0))} coins</span>'
        )
    elif view.escaped:
        score = f'<span class="lose">{_e(signed(view.escape_coins))} coins</span>'
    parts = [
        f'<div class="player{" me" if view.player_id == me else ""}">',
        '<div class="top"><div>',
        f'<span class="name">{_e(view.player_id)}</span>{_badges(view)}',
        f'<div class="sub">seat {view.seat} · {view.balance_at_deal} coins at the deal · '
        f"{_e(view.status)}</div></div>",
        f'<div class="score">{score}</div></div>',
        '<div class="felt">',
    ]
    if view.cards is None:
        parts.append(f'<div class="row"><span class="label">hand</span>{_backs(13)}</div>')
        parts.append('<div class="row words">cards hidden until the round is over</div>')
    elif view.piles:
        for pile in view.piles:
            parts.append(
                f'<div class="row"><span class="label">{_e(pile.name)}</span>'
                f'{cards(pile.cards)}<span class="words">{_e(pile.words)}</span></div>'
            )
    else:
        parts.append(
            f'<div class="row"><span class="label">dealt</span>{cards(view.cards, fan=True)}</div>'
        )
    if view.special is not None:
        parts.append(
            f'<div class="row words">special hand {_e(view.special.id)} '
            f"({_e(view.special.chinese)}), {view.special_points} points, "
            f"declared {_e(repr(view.declared))}</div>"
        )
    parts.append("</div>")
    if view.foul_reason and not view.escaped:
        parts.append(f'<div class="reason">foul: {_e(view.foul_reason)}</div>')
    if view.escaped:
        parts.append('<div class="reason">left between the deal and the showdown (R11)</div>')
    parts.append("</div>")
    return "".join(parts)


def _pair(pair: PairView) -> str:
    if pair.points:
        leader = pair.a if pair.points > 0 else pair.b
        head = f'<span class="win">{_e(leader)} {_e(signed(abs(pair.points)))}</span>'
    else:
        head = '<span class="even">even</span>'
    parts = [f'<div class="pair"><h3><span>{_e(pair.a)} vs {_e(pair.b)}</span>{head}</h3>']
    if pair.piles:
        parts.append(
            f"<table><tr><th>pile</th><th>{_e(pair.a)}</th><th>{_e(pair.b)}</th>"
            f"<th>for {_e(pair.a)}</th></tr>"
        )
        for pile in pair.piles:
            value = pile.result * pile.worth
            parts.append(
                f"<tr><td>{_e(pile.name)}</td><td>{_e(pile.a_words)}</td>"
                f'<td>{_e(pile.b_words)}</td><td class="{_tone(value)}">{_e(signed(value))}'
                "</td></tr>"
            )
        parts.append("</table>")
    parts.append(f"<div>{_e(multiplier_words(pair))}</div>")
    parts.append('<ul class="said">')
    parts += [f"<li>{_e(clause)}</li>" for clause in pair.clauses]
    parts.append("</ul></div>")
    return "".join(parts)


def _cell(value: int | None) -> str:
    text = "–" if value is None else signed(value)
    return f'<td class="{_tone(value or 0)}">{_e(text)}</td>'


def _coins(report: Report) -> str:
    rows = []
    for view in report.players:
        note = settlement_note(view)
        rows.append(
            f"<tr><td>{_e(view.player_id)}</td>{_cell(view.points)}{_cell(view.gross)}"
            f"<td>{view.balance_at_deal}</td>{_cell(view.coins)}{_cell(view.escape_coins)}"
            f"<td>{view.balance_after}</td><td>{_e(note)}</td></tr>"
        )
    return (
        "<section><h2>Coins (R7, R9)</h2>"
        f"<p>gross = points × base {report.base_stake}; settled against the balances at the "
        "deal: a loser pays at most what they had (R9.1).</p>"
        '<table class="coins"><tr><th>player</th><th>points</th><th>gross</th>'
        "<th>at the deal</th><th>settled</th><th>escape</th><th>after</th><th></th></tr>"
        + "".join(rows)
        + "</table></section>"
    )


def _proof(report: Report) -> str:
    proof = report.proof
    seed = (
        f"<code>{_e(proof.server_seed)}</code>"
        if proof.server_seed is not None
        else "not revealed yet: it is published when the round ends (R12.6)"
    )
    parts = [
        '<section class="proof"><h2>Fairness proof (R12)</h2><dl>',
        f"<dt>commitment published before the deal</dt><dd><code>{_e(proof.commitment)}</code>"
        f"<br>{_e(proof.published)}</dd>",
        f"<dt>client seed, round id</dt><dd><code>{_e(repr(proof.client_seed))}</code>, "
        f"<code>{_e(report.round_id)}</code></dd>",
    ]
    if proof.player_seeds:  # R12.8; a deal without them reads as it always did
        given = "<br>".join(
            f"{_e(player)} <code>{_e(repr(seed))}</code>" for player, seed in proof.player_seeds
        )
        parts += [
            f"<dt>player seeds, each from the player's device (R12.8)</dt><dd>{given}</dd>",
            "<dt>client seed the deal used: the client seed with the player seeds mixed in "
            f"(R12.8)</dt><dd><code>{_e(repr(proof.effective_client_seed))}</code></dd>",
        ]
    parts.append(
        f"<dt>server seed{' revealed' if proof.server_seed else ''}</dt><dd>{seed}</dd></dl>"
    )
    recomputed = (
        "the deal recomputed from the seeds and the player seeds equals the recorded hands"
        if proof.player_seeds
        else "the deal recomputed from the seeds equals the recorded hands"
    )
    if proof.server_seed is not None:
        for label, ok in (
            ("SHA-256(server seed) equals the commitment", proof.seed_ok),
            (recomputed, proof.deal_ok),
        ):
            mark = '<span class="ok">✔ verified</span>' if ok else '<span class="bad">✘ NO</span>'
            parts.append(f"<p>{mark} {_e(label)}</p>")
    parts.append("</section>")
    return "".join(parts)


def render_html(report: Report, player: str | None = None) -> str:
    """The whole page; from ``player``'s point of view when given."""
    meta = [
        f"table {report.table_id}",
        f"round {report.number} of the table",
        f"base {report.base_stake} per point",
        f"ruleset {report.ruleset.name}",
        f"dealt {report.dealt_at.isoformat(timespec='seconds')}",
    ]
    hidden = "" if report.over else " hidden"
    body = [
        '<header><h1>Thirteen <span lang="zh">十三水</span> · dispute report</h1>',
        f'<div class="chip" style="display:inline-block;margin-bottom:8px">round '
        f"{_e(report.round_id)}</div>",
        '<div class="meta">' + "".join(f'<span class="chip">{_e(m)}</span>' for m in meta),
        "</div></header><main>",
        f'<section><div class="status{hidden}">{_e(phase_words(report))}</div>',
        '<ul class="rules">' + "".join(f"<li>{_e(r)}</li>" for r in ruleset_lines(report.ruleset)),
        "</ul>",
    ]
    body += [f'<div class="note">{_e(note)}</div>' for note in report.notes]
    body.append("</section>")
    if player is not None:
        body.append(f'<section class="view"><h2>From {_e(player)}’s point of view</h2>')
        body.append(f'<p class="overall">{_e(overall_sentence(report, player))}</p>')
        for pair in report.pairs_for(player):
            if player not in (pair.a, pair.b):
                continue
            lines = pair_sentences(report, pair, player)
            points = pair.points_for(player)
            body.append(
                f'<div>against <b>{_e(pair.other(player))}</b>: <span class="{_tone(points)}">'
                f"{_e(signed(points))}</span><ul>"
                + "".join(f"<li>{_e(line)}</li>" for line in lines)
                + "</ul></div>"
            )
        body.append("</section>")
    title = "Players — front | middle | back" if report.over else "Players"
    body.append(f'<section><h2>{title}</h2><div class="players">')
    body += [_player(view, player) for view in report.players]
    body.append("</div></section>")
    if report.pairs:
        body.append('<section><h2>Comparisons (R6)</h2><div class="pairs">')
        body += [_pair(pair) for pair in report.pairs_for(player)]
        body.append("</div></section>")
    if report.over:
        body.append(_coins(report))
    body.append(_proof(report))
    if report.callers:
        body.append(
            '<section class="callers"><h2>Who called</h2><dl>'
            + "".join(
                f"<dt>{_e(deed)}</dt><dd><code>{_e(who)}</code></dd>"
                for deed, who in report.callers
            )
            + "</dl></section>"
        )
    body.append("</main>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Round {_e(report.round_id)} — dispute report</title>"
        f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>\n"
    )
