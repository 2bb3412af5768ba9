"""The round page: everything dispute staff need about one round that is over.

The service's audit verdict with its findings, then the dispute report of ``thirteen explain``
drawn by its own renderers (``service.report.html_sections``): the cards as dealt and arranged,
each comparison with its multipliers, points and coins before and after the caps (R7, R9), the
fairness proof (R12) and who called. Only the labels are the console's, in the page's language
(``Words`` is the report's ``Labels``); player ids link to their pages.
"""

from __future__ import annotations

from service._generated.thirteen.v1 import audit_pb2
from service.report.dispute import Report
from service.report.html_labels import e
from service.report.html_sections import (
    callers_html,
    coins_html,
    comparisons_html,
    players_html,
    proof_html,
)
from service.report.words import phase_words
from service.web.labels import Words
from service.web.markup import anchor, link, when


def render(words: Words, report: Report, audit: audit_pb2.AuditRoundResponse) -> str:
    """The page's body (the frame is ``markup.page``'s)."""
    parts = [
        _heading(words, report),
        _verdict(words, audit),
        _section("hands", players_html(report, words, name=_player_link)),
    ]
    if report.pairs:
        parts.append(_section("comparisons", comparisons_html(report, words)))
    if report.over:
        parts.append(_section("coins", coins_html(report, words)))
    parts.append(_section("proof", proof_html(report, words), "proof"))
    if report.callers:
        parts.append(_section("callers", callers_html(report, words), "proof"))
    return "".join(parts)


def _section(ident: str, content: str, css: str = "") -> str:
    kind = f' class="{css}"' if css else ""
    return f'<section{kind} id="{ident}">{content}</section>'


def _player_link(player_id: str) -> str:
    return anchor(link("/players", player_id), player_id)


def _heading(words: Words, report: Report) -> str:
    table = anchor(link("/tables", report.table_id), report.table_id, "id")
    facts = [
        f"{e(words('round_of_table', number=report.number))} {table}",
        e(words("base_per_point", base=report.base_stake)),
        f"{e(words('ruleset'))} {e(report.ruleset.name)}",
        f"{e(words('dealt'))} {e(when(report.dealt_at))}",
    ]
    export = link("/rounds", report.round_id, "export.json")
    return (
        f'<h1>{e(words("round"))} <span class="id">{e(report.round_id)}</span></h1>'
        f'<p class="sub">{" · ".join(facts)}</p>'
        f'<section><div class="status">{e(phase_words(report))}</div>'
        f"<p>{anchor(export, words('export'))}</p>"
        f'<p class="hint">{e(words("export_hint"))}</p></section>'
    )


def _verdict(words: Words, audit: audit_pb2.AuditRoundResponse) -> str:
    mark, css, said = ("✔", "ok", "passes") if audit.ok else ("✘", "bad", "fails")
    failed = [f for f in audit.findings if not f.ok]
    passed = [f for f in audit.findings if f.ok]

    def rows(findings: list[audit_pb2.Finding]) -> str:
        return "".join(
            f'<tr class="finding {"ok" if f.ok else "bad"}"><td>{e(f.rule)}</td>'
            f'<td class="{"win" if f.ok else "lose"}">{"ok" if f.ok else "FAIL"}</td>'
            f"<td>{e(f.message)}</td><td>{e(f.event)}</td></tr>"
            for f in findings
        )

    head = (
        f"<tr><th>{e(words('rule'))}</th><th></th><th>{e(words('check'))}</th>"
        f"<th>{e(words('event'))}</th></tr>"
    )
    parts = [
        f'<section id="verdict"><h2>{e(words("verdict"))}</h2>',
        f'<p class="verdict {css}">{mark} {e(words(said))}</p>',
        f'<p class="hint">{e(words("checked_by"))}</p>',
    ]
    if failed:
        parts.append(f'<table class="list">{head}{rows(failed)}</table>')
    if passed:
        parts.append(
            f"<details><summary>{e(words('checks_ok', count=len(passed)))}</summary>"
            f'<table class="list">{head}{rows(passed)}</table></details>'
        )
    parts.append("</section>")
    return "".join(parts)
