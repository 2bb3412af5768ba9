"""``thirteen explain --html``: the dispute report as one self-contained HTML page.

Inline CSS only: no scripts, no fonts, no images, no links to anything, so the page can be
mailed or attached to a support ticket and shows the same everywhere. Every piece of text from
the record (player ids are user input) goes through ``html.escape``.

The report's parts (``players_html``, ``comparisons_html``, ``coins_html``, ``proof_html``,
``callers_html``) are also the dispute console's round page (``service.web.round_page``): they
word their labels through a ``Labels``, English (``ENGLISH``) unless the console gives its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import Protocol

from domain.rules.cards import RANKS, SYMBOL_OF_SUIT, parse_card
from service.report.explain import PairView, PlayerView, Report
from service.report.words import (
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


ENGLISH_LABELS: dict[str, str] = {
    # a player's box
    "escaped_badge": "escaped",
    "foul_badge": "FOUL",
    "n_points": "{n} pts",
    "n_coins": "{n} coins",
    "seat_at_deal": "seat {seat} · {coins} coins at the deal",
    "hand_label": "hand",
    "hidden": "cards hidden until the round is over",
    "dealt_label": "dealt",
    "special_hand": "special hand {id} ({chinese}), {points} points, declared {declared}",
    "foul_reason": "foul: {reason}",
    "escaped_reason": "left between the deal and the showdown (R11)",
    "players_heading": "Players",
    "players_heading_over": "Players — front | middle | back",
    # the comparisons
    "comparisons": "Comparisons (R6)",
    "even": "even",
    "vs": "{a} vs {b}",
    "pile": "pile",
    "for_a": "for {a}",
    # the coins
    "coins_heading": "Coins (R7, R9)",
    "coins_how": "gross = points × base {base}; settled against the balances at the deal: a "
    "loser pays at most what they had (R9.1).",
    "col_player": "player",
    "col_points": "points",
    "col_gross": "gross",
    "col_at_deal": "at the deal",
    "col_settled": "settled",
    "col_escape": "escape",
    "col_after": "after",
    # the fairness proof
    "proof": "Fairness proof (R12)",
    "commitment": "commitment published before the deal",
    "client_seed": "client seed, round id",
    "player_seeds": "player seeds, each from the player's device (R12.8)",
    "effective_seed": "client seed the deal used: the client seed with the player seeds mixed "
    "in (R12.8)",
    "server_seed": "server seed",
    "server_seed_revealed": "server seed revealed",
    "not_revealed": "not revealed yet: it is published when the round ends (R12.6)",
    "seed_matches": "SHA-256(server seed) equals the commitment",
    "deal_matches": "the deal recomputed from the seeds equals the recorded hands",
    "deal_matches_seeds": "the deal recomputed from the seeds and the player seeds equals the "
    "recorded hands",
    "verified": "verified",
    "not_verified": "NO",
    "callers": "Who called",
}
"""The report's labels in English, by key. A label is plain words, never markup: its values
are escaped before they go in, and the label itself is not (``player's`` stays as written)."""


class Labels(Protocol):
    """How the report words its labels: ``labels(key, **values)`` for a key of
    ``ENGLISH_LABELS``, and a pile's name and a pile's recorded words (``flush, A-high``) as
    the reader reads them. The console's ``service.web.labels.Words`` is one, in two
    languages."""

    def __call__(self, key: str, /, **values: object) -> str: ...

    def pile(self, name: str) -> str: ...

    def hand_words(self, words: str) -> str: ...


class English:
    """The report's own labels (``ENGLISH_LABELS``); names and words as recorded."""

    def __call__(self, key: str, /, **values: object) -> str:
        return ENGLISH_LABELS[key].format(**values)

    def pile(self, name: str) -> str:
        return name

    def hand_words(self, words: str) -> str:
        return words


ENGLISH = English()


def _e(text: object) -> str:
    return escape(str(text), quote=True)


def _say(labels: Labels, key: str, **values: object) -> str:
    """A label as HTML: its values escaped, its words as they are (they hold no markup)."""
    return labels(key, **{name: _e(value) for name, value in values.items()})


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


def _badges(view: PlayerView, labels: Labels) -> str:
    found = []
    if view.escaped:
        found.append(f'<span class="badge escaped">{_say(labels, "escaped_badge")}</span>')
    if view.special is not None:
        found.append(f'<span class="badge special">{_e(view.special.id)}</span>')
    if view.foul_reason and not view.escaped:
        found.append(f'<span class="badge foul">{_say(labels, "foul_badge")}</span>')
    return "".join(found)


def _player(view: PlayerView, labels: Labels, me: str | None, name: Callable[[str], str]) -> str:
    score = ""
    if view.points is not None:
        points = _say(labels, "n_points", n=signed(view.points))
        coins = _say(labels, "n_coins", n=signed(view.coins or 0))
        score = (
            f'<span class="{_tone(view.points)}">{points}</span> · '
            f'<span class="{_tone(view.coins or 0)}">{coins}</span>'
        )
    elif view.escaped:
        score = f'<span class="lose">{_say(labels, "n_coins", n=signed(view.escape_coins))}</span>'
    seat = _say(labels, "seat_at_deal", seat=view.seat, coins=view.balance_at_deal)
    parts = [
        f'<div class="player{" me" if view.player_id == me else ""}">',
        '<div class="top"><div>',
        f'<span class="name">{name(view.player_id)}</span>{_badges(view, labels)}',
        f'<div class="sub">{seat} · {_e(view.status)}</div></div>',
        f'<div class="score">{score}</div></div>',
        '<div class="felt">',
    ]
    if view.cards is None:
        hand = _say(labels, "hand_label")
        parts.append(f'<div class="row"><span class="label">{hand}</span>{_backs(13)}</div>')
        parts.append(f'<div class="row words">{_say(labels, "hidden")}</div>')
    elif view.piles:
        for pile in view.piles:
            parts.append(
                f'<div class="row"><span class="label">{_e(labels.pile(pile.name))}</span>'
                f'{cards(pile.cards)}<span class="words">{_e(labels.hand_words(pile.words))}'
                "</span></div>"
            )
    else:
        dealt = _say(labels, "dealt_label")
        fan = cards(view.cards, fan=True)
        parts.append(f'<div class="row"><span class="label">{dealt}</span>{fan}</div>')
    if view.special is not None:
        special = _say(
            labels,
            "special_hand",
            id=view.special.id,
            chinese=view.special.chinese,
            points=view.special_points,
            declared=repr(view.declared),
        )
        parts.append(f'<div class="row words">{special}</div>')
    parts.append("</div>")
    if view.foul_reason and not view.escaped:
        foul = _say(labels, "foul_reason", reason=view.foul_reason)
        parts.append(f'<div class="reason">{foul}</div>')
    if view.escaped:
        parts.append(f'<div class="reason">{_say(labels, "escaped_reason")}</div>')
    parts.append("</div>")
    return "".join(parts)


def players_html(
    report: Report,
    labels: Labels = ENGLISH,
    me: str | None = None,
    name: Callable[[str], str] = _e,
) -> str:
    """The players' heading and boxes: cards by pile, badges, points and coins (a section's
    content). ``me``'s box is marked; ``name`` draws a player id (the console links it)."""
    heading = _say(labels, "players_heading_over" if report.over else "players_heading")
    boxes = "".join(_player(view, labels, me, name) for view in report.players)
    return f'<h2>{heading}</h2><div class="players">{boxes}</div>'


def _pair(pair: PairView, labels: Labels) -> str:
    if pair.points:
        leader = pair.a if pair.points > 0 else pair.b
        head = f'<span class="win">{_e(leader)} {_e(signed(abs(pair.points)))}</span>'
    else:
        head = f'<span class="even">{_say(labels, "even")}</span>'
    versus = _say(labels, "vs", a=pair.a, b=pair.b)
    parts = [f'<div class="pair"><h3><span>{versus}</span>{head}</h3>']
    if pair.piles:
        parts.append(
            f"<table><tr><th>{_say(labels, 'pile')}</th><th>{_e(pair.a)}</th>"
            f"<th>{_e(pair.b)}</th><th>{_say(labels, 'for_a', a=pair.a)}</th></tr>"
        )
        for pile in pair.piles:
            value = pile.result * pile.worth
            parts.append(
                f"<tr><td>{_e(labels.pile(pile.name))}</td>"
                f"<td>{_e(labels.hand_words(pile.a_words))}</td>"
                f"<td>{_e(labels.hand_words(pile.b_words))}</td>"
                f'<td class="{_tone(value)}">{_e(signed(value))}</td></tr>'
            )
        parts.append("</table>")
    parts.append(f"<div>{_e(multiplier_words(pair))}</div>")
    parts.append('<ul class="said">')
    parts += [f"<li>{_e(clause)}</li>" for clause in pair.clauses]
    parts.append("</ul></div>")
    return "".join(parts)


def comparisons_html(report: Report, labels: Labels = ENGLISH, player: str | None = None) -> str:
    """Every pair's comparison, pile by pile, with its multipliers and the recorded sentences
    (a section's content); ``player``'s own pairs first."""
    pairs = "".join(_pair(pair, labels) for pair in report.pairs_for(player))
    return f'<h2>{_say(labels, "comparisons")}</h2><div class="pairs">{pairs}</div>'


def _cell(value: int | None) -> str:
    text = "–" if value is None else signed(value)
    return f'<td class="{_tone(value or 0)}">{_e(text)}</td>'


def coins_html(report: Report, labels: Labels = ENGLISH) -> str:
    """Each player's points, coins before and after the caps, and why they differ (R7, R9),
    for a round that is over (a section's content)."""
    head = "".join(
        f"<th>{_say(labels, key)}</th>"
        for key in (
            "col_player",
            "col_points",
            "col_gross",
            "col_at_deal",
            "col_settled",
            "col_escape",
            "col_after",
        )
    )
    rows = []
    for view in report.players:
        note = settlement_note(view)
        rows.append(
            f"<tr><td>{_e(view.player_id)}</td>{_cell(view.points)}{_cell(view.gross)}"
            f"<td>{view.balance_at_deal}</td>{_cell(view.coins)}{_cell(view.escape_coins)}"
            f"<td>{view.balance_after}</td><td>{_e(note)}</td></tr>"
        )
    return (
        f"<h2>{_say(labels, 'coins_heading')}</h2>"
        f"<p>{_say(labels, 'coins_how', base=report.base_stake)}</p>"
        f'<table class="coins"><tr>{head}<th></th></tr>' + "".join(rows) + "</table>"
    )


def proof_html(report: Report, labels: Labels = ENGLISH) -> str:
    """The fairness proof (R12): the commitment, the seeds, and whether the revealed seed
    matches the commitment and deals the recorded hands (a section's content)."""
    proof = report.proof
    seed = (
        f"<code>{_e(proof.server_seed)}</code>"
        if proof.server_seed is not None
        else _say(labels, "not_revealed")
    )
    parts = [
        f"<h2>{_say(labels, 'proof')}</h2><dl>",
        f"<dt>{_say(labels, 'commitment')}</dt><dd><code>{_e(proof.commitment)}</code>"
        f"<br>{_e(proof.published)}</dd>",
        f"<dt>{_say(labels, 'client_seed')}</dt><dd><code>{_e(repr(proof.client_seed))}</code>, "
        f"<code>{_e(report.round_id)}</code></dd>",
    ]
    if proof.player_seeds:  # R12.8; a deal without them reads as it always did
        given = "<br>".join(
            f"{_e(player)} <code>{_e(repr(seed))}</code>" for player, seed in proof.player_seeds
        )
        parts += [
            f"<dt>{_say(labels, 'player_seeds')}</dt><dd>{given}</dd>",
            f"<dt>{_say(labels, 'effective_seed')}</dt>"
            f"<dd><code>{_e(repr(proof.effective_client_seed))}</code></dd>",
        ]
    revealed = _say(labels, "server_seed_revealed" if proof.server_seed else "server_seed")
    parts.append(f"<dt>{revealed}</dt><dd>{seed}</dd></dl>")
    recomputed = "deal_matches_seeds" if proof.player_seeds else "deal_matches"
    if proof.server_seed is not None:
        for key, ok in (("seed_matches", proof.seed_ok), (recomputed, proof.deal_ok)):
            mark = (
                f'<span class="ok">✔ {_say(labels, "verified")}</span>'
                if ok
                else f'<span class="bad">✘ {_say(labels, "not_verified")}</span>'
            )
            parts.append(f"<p>{mark} {_say(labels, key)}</p>")
    return "".join(parts)


def callers_html(report: Report, labels: Labels = ENGLISH) -> str:
    """Who caused each of the round's events, as recorded with it (a section's content)."""
    rows = "".join(
        f"<dt>{_e(deed)}</dt><dd><code>{_e(who)}</code></dd>" for deed, who in report.callers
    )
    return f"<h2>{_say(labels, 'callers')}</h2><dl>{rows}</dl>"


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
    body.append(f"<section>{players_html(report, me=player)}</section>")
    if report.pairs:
        body.append(f"<section>{comparisons_html(report, player=player)}</section>")
    if report.over:
        body.append(f"<section>{coins_html(report)}</section>")
    body.append(f'<section class="proof">{proof_html(report)}</section>')
    if report.callers:
        body.append(f'<section class="callers">{callers_html(report)}</section>')
    body.append("</main>")
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Round {_e(report.round_id)} — dispute report</title>"
        f"<style>{CSS}</style></head><body>{''.join(body)}</body></html>\n"
    )
