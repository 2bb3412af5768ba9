"""``thirteen explain --html``: the dispute report as one self-contained HTML page.

Inline CSS only: no scripts, no fonts, no images, no links to anything, so the page can be
mailed or attached to a support ticket and shows the same everywhere. Every piece of text from
the record (player ids are user input) goes through ``html.escape``. This module is the page's
frame and style; its sections are ``html_sections``'s, shared with the dispute console.
"""

from __future__ import annotations

from service.report.dispute import Report
from service.report.figures import signed
from service.report.html_labels import e
from service.report.html_sections import (
    callers_html,
    coins_html,
    comparisons_html,
    players_html,
    proof_html,
    tone,
)
from service.report.words import overall_sentence, pair_sentences, phase_words, ruleset_lines

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
"""The page's style sheet; the dispute console's pages use it too."""

R14_CSS = """
.card { position: relative; }
.card.horse { background: #fff3c4; border: 2px solid #c99a06; }
.card .m { position: absolute; top: 1px; right: 2px; font-size: 10px; color: #8a5a00;
  font-weight: 700; }
.badge.horse { background: #c99a06; }
.horse-note { color: #ffe9a6; }
.pairs.many { grid-template-columns: repeat(3, minmax(0, 1fr)); }
.pairs.many .pair { font-size: 13px; }
.pairs.many table { font-size: 12px; }
.undealt { margin-top: 12px; }
.undealt h3 { font-size: 15px; margin: 0 0 4px; }
.undealt .cards { flex-wrap: wrap; }
.glance-h { font-size: 15px; margin: 4px 0 6px; }
table.glance { border-collapse: collapse; font-size: 14px; margin: 0 0 12px; }
table.glance th, table.glance td { padding: 3px 10px; border: 1px solid var(--line);
  text-align: right; }
"""
"""What a round under R14's variants adds to the style: the horse card (R14.1), the cards
dealt to no one (R14.2.4), many pairs (R14.2.6). A round under ``standard`` or ``fujian`` gets
the page it always got, byte for byte."""


def render_html(report: Report, player: str | None = None) -> str:
    """The whole page; from ``player``'s point of view when given."""
    body = [_header(report), *_status(report)]
    if player is not None:
        body.append(_point_of_view(report, player))
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
        f"<title>Round {e(report.round_id)} — dispute report</title>"
        f"<style>{CSS}{R14_CSS if report.ruleset.variants() else ''}</style></head>"
        f"<body>{''.join(body)}</body></html>\n"
    )


def _header(report: Report) -> str:
    """The title, the round id and the round's facts as chips; opens the page's main part."""
    meta = [
        f"table {report.table_id}",
        f"round {report.number} of the table",
        f"base {report.base_stake} per point",
        f"ruleset {report.ruleset.name}",
        f"dealt {report.dealt_at.isoformat(timespec='seconds')}",
    ]
    chips = "".join(f'<span class="chip">{e(m)}</span>' for m in meta)
    return (
        '<header><h1>Thirteen <span lang="zh">十三水</span> · dispute report</h1>'
        '<div class="chip" style="display:inline-block;margin-bottom:8px">round '
        f'{e(report.round_id)}</div><div class="meta">{chips}</div></header><main>'
    )


def _status(report: Report) -> list[str]:
    """The round's phase, its ruleset (R13) and the report's notes."""
    hidden = "" if report.over else " hidden"
    parts = [
        f'<section><div class="status{hidden}">{e(phase_words(report))}</div>',
        '<ul class="rules">' + "".join(f"<li>{e(r)}</li>" for r in ruleset_lines(report.ruleset)),
        "</ul>",
    ]
    parts += [f'<div class="note">{e(note)}</div>' for note in report.notes]
    parts.append("</section>")
    return parts


def _point_of_view(report: Report, player: str) -> str:
    """Why ``player`` won or lost, then each of their pairs told to them."""
    parts = [
        f'<section class="view"><h2>From {e(player)}’s point of view</h2>',
        f'<p class="overall">{e(overall_sentence(report, player))}</p>',
    ]
    for pair in report.pairs_for(player):
        if player not in (pair.a, pair.b):
            continue
        lines = pair_sentences(report, pair, player)
        points = pair.points_for(player)
        parts.append(
            f'<div>against <b>{e(pair.other(player))}</b>: <span class="{tone(points)}">'
            f"{e(signed(points))}</span><ul>"
            + "".join(f"<li>{e(line)}</li>" for line in lines)
            + "</ul></div>"
        )
    parts.append("</section>")
    return "".join(parts)
