"""The dispute report (``service.report.dispute``) in words: the sentences the text and the HTML
share, and the plain-text report of ``thirteen explain``. Everything said here is read from the
report; nothing is judged again.
"""

from __future__ import annotations

from domain.rules.ruleset import Ruleset
from service.report.dispute import PairView, PileOutcome, PlayerView, Report
from service.report.figures import signed
from service.report.html_labels import pile_words
from service.report.variant_words import glance_lines, horse_words, symbols, variant_lines

# --- words shared by the text and the HTML ----------------------------------------------------


def ruleset_lines(ruleset: Ruleset) -> list[str]:
    """The R13 parameters that shape a showdown and its settlement, in words."""
    bonuses = (
        "; ".join(
            f"{pile} " + ", ".join(f"{c.words} {w}" for c, w in table)
            for pile, table in ruleset.pile_bonuses
        )
        or "none (every pile is worth 1)"
    )
    foul = "counts" if ruleset.foul_counts_for_home_run else "does not count"
    return [
        f"scoop ×{ruleset.scoop_multiplier} (R6.2); home run ×{ruleset.home_run_multiplier} more "
        f"at {ruleset.home_run_min_players}+ active players, scooping a foul {foul} (R6.7)",
        f"pile bonuses (R6.1): {bonuses}",
        f"A-2-3-4-5 ranks {ruleset.wheel} among straights (R2.3); escape penalty "
        f"{ruleset.escape_penalty_multiple} × base (R11.1); {ruleset.arrange_seconds} s to arrange",
        *variant_lines(ruleset),
    ]


def phase_words(report: Report) -> str:
    if report.phase == "revealed":
        return f"revealed {report.ended_at.isoformat() if report.ended_at else ''}"
    if report.phase == "abandoned":
        return (
            f"ended {report.ended_at.isoformat() if report.ended_at else ''} without a "
            "showdown: fewer than two players remained (R11.3)"
        )
    return (
        "NOT REVEALED YET: the round is in progress, so only what is public is shown; "
        "no player's cards are shown before the round is over"
    )


def multiplier_words(pair: PairView) -> str:
    """``(+1 +1 +1) = +3, scoop ×2, horse ×2, home run ×2 = +24`` for ``a``, in R14.5.6's
    order; a special takes only the horse."""
    horse = horse_words(pair)
    if pair.kind == "special":
        if horse:
            return f"a special hand's fixed points (R6.5, R6.6), {horse} = {signed(pair.points)}"
        return "none: a special hand scores its fixed points (R6.5, R6.6)"
    if pair.kind == "both_foul":
        return "both foul: 0 (R6.4)"
    terms = " ".join(f"{p.result * p.worth:+d}" for p in pair.piles)
    text = f"({terms}) = {signed(pair.base)}"
    if pair.scoop:
        bonus = f" +{pair.scoop_bonus} (R14.5.2)" if pair.scoop_bonus else ""
        text += f", scoop ×{pair.scoop}{bonus} by {pair.scooper} (R6.2)"
    if horse:
        text += f", {horse}"
    if pair.home_run:
        text += f", home run ×{pair.home_run} by {pair.scooper} (R6.7)"
    if pair.scoop or pair.home_run or horse:
        text += f" = {signed(pair.points)}"
    return text


def settlement_note(view: PlayerView) -> str:
    """Why settled coins differ from the gross result (R9.1 cap, R9.2 scaling)."""
    if view.gross is None or view.coins is None or view.gross == view.coins:
        return ""
    if view.gross < 0:
        return f"capped at the balance at the deal, {view.balance_at_deal} (R9.1)"
    return "scaled down: the losers could not pay in full (R9.2)"


def _pile_sentence(pair: PairView, pile: PileOutcome, me: str) -> str:
    other = pair.other(me)
    result = pile.result if me == pair.a else -pile.result
    mine, theirs = (pile.a_words, pile.b_words) if me == pair.a else (pile.b_words, pile.a_words)
    points = signed(result * pile.worth)
    if pair.kind == "foul":
        if result > 0:
            return f"Your {pile.name} ({mine}) wins against {other}'s foul hand: {points}"
        return f"{other}'s {pile.name} ({theirs}) wins against your foul hand: {points}"
    if result > 0:
        return f"Your {pile.name} ({mine}) beat {other}'s {pile.name} ({theirs}): {points}"
    if result < 0:
        return f"Your {pile.name} ({mine}) lost to {other}'s {pile.name} ({theirs}): {points}"
    return f"Your {pile.name} ({mine}) tied {other}'s {pile.name} ({theirs}): 0"


def _special_sentence(report: Report, pair: PairView, me: str) -> str:
    sentence = _special_verdict(report, pair, me)
    horse = horse_words(pair)
    if not horse:
        return sentence
    return f"{sentence.replace('no multiplier', 'no scoop')}; {horse}"


def _special_verdict(report: Report, pair: PairView, me: str) -> str:
    other = pair.other(me)
    mine, theirs = report.player(me), report.player(other)
    points = signed(pair.points_for(me))
    if mine.special and theirs.special:
        if mine.special is theirs.special:
            return f"You and {other} both hold {mine.special.id}: a tie, 0 (R6.6)"
        if pair.points_for(me) > 0:
            return (
                f"Your {mine.special.id} ({mine.special.chinese}) outranks {other}'s "
                f"{theirs.special.id}: you score your special's points, {points} (R6.6)"
            )
        return (
            f"{other}'s {theirs.special.id} ({theirs.special.chinese}) outranks your "
            f"{mine.special.id}: {other} scores its points, {points} (R6.6)"
        )
    if mine.special:
        return (
            f"Your special hand {mine.special.id} ({mine.special.chinese}) beats {other}'s "
            f"hand for its fixed {mine.special_points} points, no multiplier: {points} (R6.5)"
        )
    assert theirs.special is not None
    return (
        f"{other}'s special hand {theirs.special.id} ({theirs.special.chinese}) beats any "
        f"arranged hand for its fixed {theirs.special_points} points, no multiplier: "
        f"{points} (R6.5)"
    )


def pair_sentences(report: Report, pair: PairView, me: str) -> list[str]:
    """The pair told to ``me``: a sentence per pile, the multipliers, the points."""
    other = pair.other(me)
    points = pair.points_for(me)
    if pair.kind == "special":
        return [_special_sentence(report, pair, me)]
    if pair.kind == "both_foul":
        return [f"You and {other} are both foul: no points (R6.4)"]
    lines = []
    if pair.kind == "foul":
        if points > 0:
            reason = report.player(other).foul_reason
            lines.append(f"{other} is foul ({reason}), so you win all three piles (R6.3)")
        else:
            reason = report.player(me).foul_reason
            lines.append(f"You are foul ({reason}), so {other} wins all three piles (R6.3)")
    lines += [_pile_sentence(pair, pile, me) for pile in pair.piles]
    base = pair.base if me == pair.a else -pair.base
    total = f"Result against {other}: {signed(points)} = piles {signed(base)}"
    if pair.scoop:
        who = f"you scoop {other}" if pair.scooper == me else f"{other} scoops you"
        bonus = f", bonus {pair.scoop_bonus} to the scooper (R14.5.2)" if pair.scoop_bonus else ""
        total += f" × {pair.scoop} ({who}, R6.2{bonus})"
    if pair.horse_holders:
        holder = (
            "you both hold"
            if len(pair.horse_holders) == 2
            else ("you hold" if pair.horse_holders[0] == me else f"{pair.horse_holders[0]} holds")
        )
        total += f" × {pair.horse} ({holder} the horse 马, R14.1.4)"
    if pair.home_run:
        who = "your" if pair.scooper == me else f"{other}'s"
        total += f" × {pair.home_run} ({who} home run, R6.7)"
    lines.append(total)
    return lines


def _reason(report: Report, pair: PairView, me: str) -> str:
    other = pair.other(me)
    if pair.kind == "special":
        if pair.points == 0:
            return "the same special hand"
        winner = me if pair.points_for(me) > 0 else other  # always the stronger special
        special = report.player(winner).special
        assert special is not None
        return f"{'your' if winner == me else other + chr(39) + 's'} special hand {special.id}"
    if pair.kind == "both_foul":
        return "both foul"
    if pair.kind == "foul":
        return f"{'you' if pair.points_for(me) < 0 else other} fouled, scoop ×{pair.scoop}"
    won = sum(1 for p in pair.piles if (p.result if me == pair.a else -p.result) > 0)
    lost = sum(1 for p in pair.piles if (p.result if me == pair.a else -p.result) < 0)
    text = f"{won} pile(s) won, {lost} lost, {3 - won - lost} tied"
    if pair.scoop:
        text += f", {'you scoop' if pair.scooper == me else 'scooped'} ×{pair.scoop}"
    if pair.horse_holders:
        text += f", horse ×{pair.horse}"
    if pair.home_run:
        text += f", home run ×{pair.home_run}"
    return text


def overall_sentence(report: Report, me: str) -> str:
    """Why ``me`` won or lost the round, pair by pair."""
    view = report.player(me)
    if view.escaped:
        paid = -view.escape_coins
        return (
            f"You escaped between the deal and the showdown and paid {paid} coins "
            "(R11.1); you took no part in the showdown."
        )
    if not report.over:
        return "The round is not over yet: there is nothing to explain before the showdown."
    if view.points is None:
        return "The round ended without a showdown (R11.3): no points were scored."
    parts = []
    for pair in report.pairs_for(me):
        if me not in (pair.a, pair.b):
            continue
        points = pair.points_for(me)
        direction = "from" if points >= 0 else "to"
        parts.append(f"{signed(points)} {direction} {pair.other(me)} ({_reason(report, pair, me)})")
    verdict = "won" if view.points > 0 else "lost" if view.points < 0 else "broke even with"
    coins = f"{signed(view.coins or 0)} coins after settlement"
    return f"You {verdict} {abs(view.points)} points ({coins}): " + "; ".join(parts) + "."


# --- text -------------------------------------------------------------------------------------


def _player_lines(view: PlayerView, width: int, ruleset: Ruleset) -> list[str]:
    name = view.player_id.ljust(width)
    pad = " " * (width + 2)
    lines = [f"  {name}  seat {view.seat}, balance at the deal {view.balance_at_deal}: "]
    lines[0] += view.status
    if view.cards is None:
        return lines
    horse = str(ruleset.horse_card) if view.horse and ruleset.horse_card is not None else None
    lines.append(f"  {pad}dealt   {symbols(view.cards, horse)}")
    if horse is not None and ruleset.horse_card is not None:
        lines.append(
            f"  {pad}holds the horse card 马牌 {ruleset.horse_card.symbol()} (in brackets): "
            f"each of {view.player_id}'s pairs counts ×{ruleset.horse_multiplier} (R14.1)"
        )
    shown = [symbols(p.cards, horse) for p in view.piles]
    pile_width = max((len(text) for text in shown), default=0)
    for pile, text in zip(view.piles, shown, strict=True):
        words = f"  {pile_words(pile.words)}" if pile.words else ""
        lines.append(f"  {pad}{pile.name:<7} {text:<{pile_width}}{words}")
    if view.special is not None:
        how = "the split that shows it (R5.5)" if view.piles else "no split needed"
        lines.append(
            f"  {pad}declared {view.declared!r}: {view.special.id} ({view.special.chinese}), "
            f"{view.special_points} points; {how}"
        )
    if view.escaped:
        lines.append(f"  {pad}took no part in the showdown (R11.3)")
    return [line.rstrip() for line in lines]


def _pair_lines(pair: PairView) -> list[str]:
    lead = (
        f"{pair.a} {signed(pair.points)}"
        if pair.points > 0
        else f"{pair.b} {signed(-pair.points)}"
        if pair.points < 0
        else "even"
    )
    lines = [f"  {pair.a} vs {pair.b}: {lead}"]
    lines += [f"      {clause}" for clause in pair.clauses]
    if pair.piles:
        lines.append(
            f"    piles for {pair.a}: "
            + ", ".join(f"{p.name} {signed(p.result * p.worth)}" for p in pair.piles)
        )
    lines.append(f"    multipliers: {multiplier_words(pair)}")
    lines.append(f"    points: {pair.a} {signed(pair.points)}, {pair.b} {signed(-pair.points)}")
    return lines


def _coin_lines(report: Report) -> list[str]:
    width = max(6, *(len(p.player_id) for p in report.players))
    head = (
        f"  {'player':<{width}}  {'points':>6}  {'gross':>7}  {'at deal':>8}  "
        f"{'settled':>7}  {'escape':>6}  {'after':>7}"
    )
    lines = [head]
    notes = []
    for view in report.players:
        points = signed(view.points) if view.points is not None else "-"
        gross_ = signed(view.gross) if view.gross is not None else "-"
        settled = signed(view.coins) if view.coins is not None else "-"
        lines.append(
            f"  {view.player_id:<{width}}  {points:>6}  {gross_:>7}  {view.balance_at_deal:>8}  "
            f"{settled:>7}  {signed(view.escape_coins):>6}  {view.balance_after:>7}"
        )
        note = settlement_note(view)
        if note:
            notes.append(f"  {view.player_id}: gross {view.gross}, settled {view.coins}: {note}")
    return lines + notes


def proof_lines(report: Report) -> list[str]:
    proof = report.proof
    lines = [
        f"commitment published before the deal: {proof.commitment}",
        f"  {proof.published}",
        f"client seed {proof.client_seed!r}, round id {report.round_id}",
    ]
    if proof.player_seeds:  # R12.8; a deal without them reads as it always did
        lines.append("player seeds, each given from the player's device with the deal (R12.8):")
        lines += [f"  {player} {seed!r}" for player, seed in proof.player_seeds]
        lines.append("the deal used the client seed with the player seeds mixed in (R12.8):")
        lines.append(f"  {proof.effective_client_seed!r}")
    if proof.server_seed is None:
        lines.append(
            "server seed: not revealed yet; it is published when the round ends (R12.6), "
            "and then anyone can check it against the commitment"
        )
        return lines
    verdict = "yes, verified" if proof.seed_ok else "NO: the seed does not match"
    lines.append(f"server seed revealed {proof.server_seed}")
    lines.append(f"SHA-256(server seed) equals the commitment: {verdict}")
    dealt = "yes, verified" if proof.deal_ok else "NO: the recorded hands differ"
    seeds = "the seeds and the player seeds" if proof.player_seeds else "the seeds"
    rules = "R12.3–R12.5, R12.8" if proof.player_seeds else "R12.3–R12.5"
    lines.append(
        f"the deal recomputed from {seeds} ({rules}, {proof.players} players) "
        f"equals the recorded hands: {dealt}"
    )
    return lines


def _viewpoint_lines(report: Report, player: str) -> list[str]:
    """The section on ``player``'s own result: overall, then against each opponent."""
    out = ["", f"From {player}'s point of view", f"  {overall_sentence(report, player)}"]
    for pair in report.pairs_for(player):
        if player in (pair.a, pair.b):
            out.append(f"  against {pair.other(player)}:")
            out += [f"    {line}" for line in pair_sentences(report, pair, player)]
    return out


def render_text(report: Report, player: str | None = None) -> str:
    """The dispute report for people; from ``player``'s point of view when given."""
    out = [f"Dispute report for round {report.round_id}"]
    out.append(
        f"  table {report.table_id}, round {report.number} of the table, dealt "
        f"{report.dealt_at.isoformat()}, deadline {report.deadline.isoformat()}"
    )
    out.append(f"  {phase_words(report)}")
    out.append(f"  base stake {report.base_stake} coin(s) per point (R8.3)")
    out.append(f"  ruleset {report.ruleset.name}:")
    out += [f"    {line}" for line in ruleset_lines(report.ruleset)]
    out += [f"  NOTE: {note}" for note in report.notes]
    if player is not None:
        out += _viewpoint_lines(report, player)
    out.append("")
    out.append("Players (front | middle | back)" if report.over else "Players")
    width = max(len(p.player_id) for p in report.players)
    for view in report.players:
        out += _player_lines(view, width, report.ruleset)
    if report.undealt:
        out.append(f"  undealt ({len(report.undealt)} cards, R14.2.4): {symbols(report.undealt)}")
    escapes = [p for p in report.players if p.escaped]
    if escapes:
        out.append("")
        out.append("Escapes (R11)")
        for view in escapes:
            shares = ", ".join(
                f"{p.player_id} {signed(p.escape_coins)}" for p in report.players if p.escape_coins
            )
            out.append(f"  {view.player_id} left between the deal and the showdown: {shares}")
    if report.pairs:
        out.append("")
        out.append("Comparisons (R6)")
        glance = glance_lines(report)
        if glance:
            out.append(f"  {len(report.pairs)} pairs at a glance: points for the row's player")
            out += [f"    {line}" for line in glance]
            out.append("")
        for pair in report.pairs_for(player):
            out += _pair_lines(pair)
    if report.over:
        out.append("")
        out.append(
            f"Coins (R7, R9): gross = points × base {report.base_stake}; settled against the "
            "balances at the deal"
        )
        out += _coin_lines(report)
    out.append("")
    out.append("Fairness proof (R12)")
    out += [f"  {line}" for line in proof_lines(report)]
    if report.callers:
        out.append("")
        out.append("Who called (the identity recorded with each event)")
        out += [f"  {deed}: {who}" for deed, who in report.callers]
    return "\n".join(out) + "\n"
