"""The page frame, links and style every console page shares.

Every text that reaches a page goes through ``e`` (ids are user input, and so is everything the
service recorded about them); every id in a link is percent-encoded whole (``link``), so an id
holding ``/``, ``?`` or ``#`` still names itself. The style is one stylesheet served by the
console (``/console.css``): the Content-Security-Policy allows no inline style or script.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from urllib.parse import quote, urlencode

from service.report.html import CSS as REPORT_CSS
from service.report.html import R14_CSS
from service.report.html_labels import e
from service.report.html_sections import cards as report_cards
from service.web.labels import LANGUAGES, Words

CONSOLE_CSS = """
.bar { background: linear-gradient(var(--felt), var(--felt-dark)); color: #fff;
  padding: 10px 32px; display: flex; justify-content: space-between; align-items: center; }
.bar a { color: #fff; text-decoration: none; }
.bar .brand { font-weight: 700; font-size: 18px; }
.bar .lang a, .bar .lang b { margin-left: 10px; }
.bar .lang b { border-bottom: 2px solid #fff; }
h1 { font-size: 22px; margin: 18px 0 6px; overflow-wrap: anywhere; }
.sub { color: var(--muted); }
.id { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; overflow-wrap: anywhere; }
form.find { display: flex; gap: 8px; align-items: center; margin: 8px 0; }
form.find label { width: 110px; font-weight: 600; }
form.find input { flex: 1; max-width: 460px; padding: 6px 8px; font-size: 15px;
  border: 1px solid #9aa29a; border-radius: 6px; }
form.find button { padding: 6px 14px; font-size: 15px; border-radius: 6px;
  border: 1px solid var(--felt-dark); background: var(--felt); color: #fff; }
table.list { border-collapse: collapse; width: 100%; font-size: 14px; }
table.list th, table.list td { padding: 5px 8px; border-bottom: 1px solid var(--line);
  text-align: left; vertical-align: top; }
table.list td.num, table.list th.num { text-align: right; white-space: nowrap; }
.mini .card { width: 24px; height: 32px; padding: 1px 2px; }
.mini .card .r { font-size: 11px; }
.mini .card .s { font-size: 14px; margin-bottom: 1px; }
.mini { white-space: nowrap; }
.mini .cards { gap: 2px; display: inline-flex; }
.mini .pilegap { display: inline-block; width: 10px; }
.verdict { font-size: 18px; font-weight: 700; }
.verdict.ok { color: var(--win); }
.verdict.bad { color: var(--lose); }
.finding.bad td { background: #fdecea; }
.pager { margin: 10px 0; display: flex; gap: 16px; }
.error h1 { color: var(--lose); }
.hint { color: var(--muted); font-size: 13px; }
footer { color: var(--muted); font-size: 12px; text-align: center; padding: 8px 0 20px; }
"""

STYLESHEET = REPORT_CSS + R14_CSS + CONSOLE_CSS
"""``/console.css``: the explain report's cards, players, pairs and proof, and the console's."""


DOT_SEGMENTS = (".", "..")
"""Ids a browser would resolve away as path segments (WHATWG URL), even percent-encoded:
their links carry the id in the query instead (``/players/?id=..``)."""


def link(path: str, id_: str = "", part: str = "", **query: str) -> str:
    """A console page: ``path/ID[/part]`` with the id percent-encoded whole, empty query
    values left out.

    >>> link("/players", "a/b?c#d", page="x y"), link("/rounds", "r1", "export.json")
    ('/players/a%2Fb%3Fc%23d?page=x+y', '/rounds/r1/export.json')
    >>> link("/rounds", "..", "export.json")
    '/rounds/?id=..&part=export.json'
    """
    if id_ in DOT_SEGMENTS:
        url, query = path + "/", {"id": id_, "part": part, **query}
    else:
        url = path + ("/" + quote(id_, safe="") if id_ else "") + ("/" + part if part else "")
    given = {k: v for k, v in query.items() if v}
    return url + ("?" + urlencode(given) if given else "")


def anchor(href: str, text: str, css: str = "") -> str:
    kind = f' class="{css}"' if css else ""
    return f'<a href="{e(href)}"{kind}>{e(text)}</a>'


def when(at: datetime | None) -> str:
    """A moment as staff read it: UTC to the second."""
    if at is None:
        return "–"
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def mini_cards(*piles: Sequence[str]) -> str:
    """Small cards, pile after pile (a hand, or front | middle | back)."""
    gap = '<span class="pilegap"></span>'
    return '<span class="mini">' + gap.join(report_cards(p) for p in piles if p) + "</span>"


def page(
    words: Words,
    title: str,
    body: str,
    here: str = "/",
    query: Mapping[str, str] | None = None,
) -> str:
    """A whole page: the bar with the language switch (links to this page in each language),
    ``body`` and the footer."""
    kept = {k: v for k, v in (query or {}).items() if k != "lang"}
    switch = []
    for lang, name in zip(LANGUAGES, ("English", "中文"), strict=True):
        if lang == words.lang:
            switch.append(f'<b lang="{lang}">{name}</b>')
        else:
            target = here + "?" + urlencode({**kept, "lang": lang})
            switch.append(f'<a href="{e(target)}" lang="{lang}" hreflang="{lang}">{name}</a>')
    html_lang = "zh-CN" if words.zh else "en"
    return (
        f'<!DOCTYPE html>\n<html lang="{html_lang}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)} · {e(words('console'))}</title>"
        '<link rel="stylesheet" href="/console.css"></head><body>'
        f'<div class="bar"><a class="brand" href="/">Thirteen 十三水 · {e(words("console"))}</a>'
        f'<span class="lang">{e(words("language"))}: {"".join(switch)}</span></div>'
        f"<main>{body}</main>"
        f"<footer>{e(words('read_only'))}"
        + (f" {e(words('record_in_english'))}" if words.zh else "")
        + "</footer></body></html>\n"
    )
