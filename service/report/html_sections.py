"""The dispute report's sections as HTML: the players with their cards, the comparisons, the
coins (R7, R9), the fairness proof (R12) and who called. ``thirteen explain --html`` frames them
as one page (``html``); the dispute console's round page (``service.web.round_page``) shows the
same, worded through its own ``Labels``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from domain.rules.cards import RANKS, SYMBOL_OF_SUIT, parse_card
from service.report.dispute import PairView, PlayerView, Report
from service.report.figures import signed
from service.report.html_labels import ENGLISH, Labels, e, say
from service.report.words import multiplier_words, settlement_note


def tone(value: int) -> str:
    """The CSS class of a change of points or coins: ``win``, ``lose`` or ``even``."""
    return "win" if value > 0 else "lose" if value < 0 else "even"


def card(text: str, horse: str = "") -> str:
    """One card as a box: rank in the corner, the suit large; red suits red. ``horse``, the
    title of the horse card (R14.1.2), marks it: gold, with 马 in the corner."""
    c = parse_card(text)
    rank = "10" if RANKS[c.rank] == "T" else RANKS[c.rank]
    suit = SYMBOL_OF_SUIT[str(c)[1]]
    red = " red" if c.is_red else ""
    if horse:
        return (
            f'<span class="card{red} horse" title="{horse}">'
            f'<span class="r">{rank}</span><span class="m" lang="zh">马</span>'
            f'<span class="s">{suit}</span></span>'
        )
    return (
        f'<span class="card{red}" title="{e(c.symbol())}">'
        f'<span class="r">{rank}</span><span class="s">{suit}</span></span>'
    )


def cards(
    texts: Sequence[str], fan: bool = False, horse: str | None = None, title: str = ""
) -> str:
    """A pile side by side, or a whole hand fanned (overlapping, ranks still in view); each
    copy of a card is a card of its own (R14.2.3). The ``horse`` card, when given, is marked
    with its ``title``."""
    kind = "cards fan" if fan else "cards"
    return (
        f'<span class="{kind}">'
        + "".join(card(t, title if t == horse else "") for t in texts)
        + "</span>"
    )


def _horse(view: PlayerView, labels: Labels, report: Report) -> tuple[str | None, str]:
    """The horse card and its title when ``view`` holds it (R14.1.2), else (None, "")."""
    horse = report.ruleset.horse_card
    if not view.horse or horse is None:
        return None, ""
    return str(horse), say(labels, "horse_card_title", card=horse.symbol())


def _backs(count: int) -> str:
    return '<span class="cards fan">' + '<span class="card back"></span>' * count + "</span>"


def _badges(view: PlayerView, labels: Labels) -> str:
    found = []
    if view.horse:
        found.append(f'<span class="badge horse">{say(labels, "horse_badge")}</span>')
    if view.escaped:
        found.append(f'<span class="badge escaped">{say(labels, "escaped_badge")}</span>')
    if view.special is not None:
        found.append(f'<span class="badge special">{e(view.special.id)}</span>')
    if view.foul_reason and not view.escaped:
        found.append(f'<span class="badge foul">{say(labels, "foul_badge")}</span>')
    return "".join(found)


def _player(
    view: PlayerView,
    labels: Labels,
    me: str | None,
    name: Callable[[str], str],
    report: Report,
) -> str:
    """A player's box: name, badges, seat and score on top, the cards on the felt below."""
    seat = say(labels, "seat_at_deal", seat=view.seat, coins=view.balance_at_deal)
    parts = [
        f'<div class="player{" me" if view.player_id == me else ""}">',
        '<div class="top"><div>',
        f'<span class="name">{name(view.player_id)}</span>{_badges(view, labels)}',
        f'<div class="sub">{seat} · {e(view.status)}</div></div>',
        f'<div class="score">{_score(view, labels)}</div></div>',
        '<div class="felt">',
        *_felt(view, labels, report),
        "</div>",
    ]
    if view.foul_reason and not view.escaped:
        foul = say(labels, "foul_reason", reason=view.foul_reason)
        parts.append(f'<div class="reason">{foul}</div>')
    if view.escaped:
        parts.append(f'<div class="reason">{say(labels, "escaped_reason")}</div>')
    parts.append("</div>")
    return "".join(parts)


def _score(view: PlayerView, labels: Labels) -> str:
    if view.points is not None:
        points = say(labels, "n_points", n=signed(view.points))
        coins = say(labels, "n_coins", n=signed(view.coins or 0))
        return (
            f'<span class="{tone(view.points)}">{points}</span> · '
            f'<span class="{tone(view.coins or 0)}">{coins}</span>'
        )
    if view.escaped:
        return f'<span class="lose">{say(labels, "n_coins", n=signed(view.escape_coins))}</span>'
    return ""


def _felt(view: PlayerView, labels: Labels, report: Report) -> list[str]:
    """The rows of cards: backs while hidden, the piles once arranged, else the hand as dealt;
    then the special hand, if any, and the horse card held (R14.1)."""
    rows = []
    horse, title = _horse(view, labels, report)
    if view.cards is None:
        hand = say(labels, "hand_label")
        rows.append(f'<div class="row"><span class="label">{hand}</span>{_backs(13)}</div>')
        rows.append(f'<div class="row words">{say(labels, "hidden")}</div>')
    elif view.piles:
        for pile in view.piles:
            rows.append(
                f'<div class="row"><span class="label">{e(labels.pile(pile.name))}</span>'
                f"{cards(pile.cards, horse=horse, title=title)}"
                f'<span class="words">{e(labels.hand_words(pile.words))}'
                "</span></div>"
            )
    else:
        dealt = say(labels, "dealt_label")
        fan = cards(view.cards, fan=True, horse=horse, title=title)
        rows.append(f'<div class="row"><span class="label">{dealt}</span>{fan}</div>')
    if view.special is not None:
        special = say(
            labels,
            "special_hand",
            id=view.special.id,
            chinese=view.special.chinese,
            points=view.special_points,
            declared=repr(view.declared),
        )
        rows.append(f'<div class="row words">{special}</div>')
    if horse is not None:
        held = say(
            labels,
            "horse_holder",
            card=report.ruleset.horse_card.symbol() if report.ruleset.horse_card else "",
            factor=report.ruleset.horse_multiplier,
        )
        rows.append(f'<div class="row words horse-note">{held}</div>')
    return rows


def players_html(
    report: Report,
    labels: Labels = ENGLISH,
    me: str | None = None,
    name: Callable[[str], str] = e,
) -> str:
    """The players' heading and boxes: cards by pile, badges, points and coins (a section's
    content). ``me``'s box is marked; ``name`` draws a player id (the console links it)."""
    heading = say(labels, "players_heading_over" if report.over else "players_heading")
    boxes = "".join(_player(view, labels, me, name, report) for view in report.players)
    return f'<h2>{heading}</h2><div class="players">{boxes}</div>{_undealt(report, labels)}'


def _undealt(report: Report, labels: Labels) -> str:
    """R14.2.4: the cards dealt to no one, once the round is public; nothing when every card
    was dealt."""
    if not report.undealt:
        return ""
    how = say(labels, "undealt_how", n=len(report.undealt), deck=len(report.ruleset.deck))
    return (
        f'<div class="undealt"><h3>{say(labels, "undealt")}</h3><p>{how}</p>'
        f"{cards(report.undealt)}</div>"
    )


def _glance(report: Report, labels: Labels) -> str:
    """With five or six players (10 or 15 pairs, R14.2.6), every pair's points in one table:
    the row's player against the column's."""
    if len(report.players) <= 4 or not report.pairs:
        return ""
    at_showdown = {x.a for x in report.pairs} | {x.b for x in report.pairs}
    ids = [p.player_id for p in report.players if p.player_id in at_showdown]
    points = {(x.a, x.b): x.points for x in report.pairs}
    points |= {(x.b, x.a): -x.points for x in report.pairs}
    head = "".join(f"<th>{e(i)}</th>" for i in ids)
    rows = []
    for row in ids:
        cells = "".join(
            "<td>·</td>" if row == col else _cell(points.get((row, col))) for col in ids
        )
        total = sum(points.get((row, col), 0) for col in ids)
        rows.append(f"<tr><th>{e(row)}</th>{cells}{_cell(total)}</tr>")
    return (
        f'<h3 class="glance-h">{say(labels, "glance")}</h3>'
        f'<table class="glance"><tr><th></th>{head}<th>Σ</th></tr>{"".join(rows)}</table>'
    )


def _pair(pair: PairView, labels: Labels) -> str:
    if pair.points:
        leader = pair.a if pair.points > 0 else pair.b
        head = f'<span class="win">{e(leader)} {e(signed(abs(pair.points)))}</span>'
    else:
        head = f'<span class="even">{say(labels, "even")}</span>'
    if pair.horse_holders:  # R14.1.3
        head = (
            f'<span class="badge horse">{say(labels, "horse_badge")} ×{pair.horse}</span> ' + head
        )
    versus = say(labels, "vs", a=pair.a, b=pair.b)
    parts = [f'<div class="pair"><h3><span>{versus}</span>{head}</h3>']
    if pair.piles:
        parts.append(
            f"<table><tr><th>{say(labels, 'pile')}</th><th>{e(pair.a)}</th>"
            f"<th>{e(pair.b)}</th><th>{say(labels, 'for_a', a=pair.a)}</th></tr>"
        )
        for pile in pair.piles:
            value = pile.result * pile.worth
            parts.append(
                f"<tr><td>{e(labels.pile(pile.name))}</td>"
                f"<td>{e(labels.hand_words(pile.a_words))}</td>"
                f"<td>{e(labels.hand_words(pile.b_words))}</td>"
                f'<td class="{tone(value)}">{e(signed(value))}</td></tr>'
            )
        parts.append("</table>")
    parts.append(f"<div>{e(multiplier_words(pair))}</div>")
    parts.append('<ul class="said">')
    parts += [f"<li>{e(clause)}</li>" for clause in pair.clauses]
    parts.append("</ul></div>")
    return "".join(parts)


def comparisons_html(report: Report, labels: Labels = ENGLISH, player: str | None = None) -> str:
    """Every pair's comparison, pile by pile, with its multipliers and the recorded sentences
    (a section's content); ``player``'s own pairs first."""
    pairs = "".join(_pair(pair, labels) for pair in report.pairs_for(player))
    many = " many" if len(report.pairs) > 6 else ""  # 10 or 15 pairs (R14.2.6): three across
    return (
        f"<h2>{say(labels, 'comparisons')}</h2>{_glance(report, labels)}"
        f'<div class="pairs{many}">{pairs}</div>'
    )


def _cell(value: int | None) -> str:
    text = "–" if value is None else signed(value)
    return f'<td class="{tone(value or 0)}">{e(text)}</td>'


def coins_html(report: Report, labels: Labels = ENGLISH) -> str:
    """Each player's points, coins before and after the caps, and why they differ (R7, R9),
    for a round that is over (a section's content)."""
    head = "".join(
        f"<th>{say(labels, key)}</th>"
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
            f"<tr><td>{e(view.player_id)}</td>{_cell(view.points)}{_cell(view.gross)}"
            f"<td>{view.balance_at_deal}</td>{_cell(view.coins)}{_cell(view.escape_coins)}"
            f"<td>{view.balance_after}</td><td>{e(note)}</td></tr>"
        )
    return (
        f"<h2>{say(labels, 'coins_heading')}</h2>"
        f"<p>{say(labels, 'coins_how', base=report.base_stake)}</p>"
        f'<table class="coins"><tr>{head}<th></th></tr>' + "".join(rows) + "</table>"
    )


def proof_html(report: Report, labels: Labels = ENGLISH) -> str:
    """The fairness proof (R12): the commitment, the seeds, and whether the revealed seed
    matches the commitment and deals the recorded hands (a section's content)."""
    proof = report.proof
    seed = (
        f"<code>{e(proof.server_seed)}</code>"
        if proof.server_seed is not None
        else say(labels, "not_revealed")
    )
    parts = [
        f"<h2>{say(labels, 'proof')}</h2><dl>",
        f"<dt>{say(labels, 'commitment')}</dt><dd><code>{e(proof.commitment)}</code>"
        f"<br>{e(proof.published)}</dd>",
        f"<dt>{say(labels, 'client_seed')}</dt><dd><code>{e(repr(proof.client_seed))}</code>, "
        f"<code>{e(report.round_id)}</code></dd>",
    ]
    if proof.player_seeds:  # R12.8; a deal without them reads as it always did
        given = "<br>".join(
            f"{e(player)} <code>{e(repr(seed))}</code>" for player, seed in proof.player_seeds
        )
        parts += [
            f"<dt>{say(labels, 'player_seeds')}</dt><dd>{given}</dd>",
            f"<dt>{say(labels, 'effective_seed')}</dt>"
            f"<dd><code>{e(repr(proof.effective_client_seed))}</code></dd>",
        ]
    revealed = say(labels, "server_seed_revealed" if proof.server_seed else "server_seed")
    parts.append(f"<dt>{revealed}</dt><dd>{seed}</dd></dl>")
    recomputed = "deal_matches_seeds" if proof.player_seeds else "deal_matches"
    if proof.server_seed is not None:
        for key, ok in (("seed_matches", proof.seed_ok), (recomputed, proof.deal_ok)):
            mark = (
                f'<span class="ok">✔ {say(labels, "verified")}</span>'
                if ok
                else f'<span class="bad">✘ {say(labels, "not_verified")}</span>'
            )
            parts.append(f"<p>{mark} {say(labels, key)}</p>")
    return "".join(parts)


def callers_html(report: Report, labels: Labels = ENGLISH) -> str:
    """Who caused each of the round's events, as recorded with it (a section's content)."""
    rows = "".join(
        f"<dt>{e(deed)}</dt><dd><code>{e(who)}</code></dd>" for deed, who in report.callers
    )
    return f"<h2>{say(labels, 'callers')}</h2><dl>{rows}</dl>"
