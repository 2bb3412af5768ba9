"""The pure verifier: given a round's stored events and its table's ruleset, re-derive
everything and say, rule by rule, whether the record agrees (issue: audit and disputes).

It trusts nothing it is given except the rules: the deal is recomputed from the seeds, every
arrangement and declaration is checked against the dealt cards, the showdown and settlement are
scored again and compared with what was recorded, with the wallet movements and with the
results view, and the hash chain of the round's events is recomputed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from domain.errors import RuleError
from domain.fairness.proof import Proof, prove
from domain.fairness.shuffle import check_player_seeds, in_seat_order
from domain.findings import Finding
from domain.recorded import Outcome, record
from domain.results import RoundResult, round_result
from domain.round import Round
from domain.rules.arrangement import Arrangement
from domain.rules.cards import parse_cards
from domain.rules.escape import escape_transfers
from domain.rules.play import declare
from domain.rules.ruleset import Ruleset
from domain.rules.specials import Split
from domain.rules.stakes import round_base
from domain.tlog.chain import StoredRecord, verify_chain

CHAIN_RULE = "CHAIN"


@dataclass(frozen=True)
class RoundEvidence:
    """Everything recorded about one round.

    ``events`` are the round stream's domain events in version order and ``records`` the same
    events as stored (for the hash chain). ``wallet_moves`` are the coins each player's wallet
    moved for this round (settlement, escape penalty and shares); ``view`` the results view's
    copy of the result; ``receipt`` a chain head handed out at the reveal, if one is known.
    """

    round_id: str
    records: Sequence[StoredRecord]
    events: Sequence[Any]
    table_ruleset: Mapping[str, Any]
    wallet_moves: Mapping[str, Sequence[tuple[str, int]]] = field(default_factory=dict)
    view: RoundResult | None = None
    receipt: str = ""
    table_ended: bool | None = None  # whether the table recorded this round's end, if known


class _Report:
    def __init__(self) -> None:
        self.findings: list[Finding] = []

    def check(self, rule: str, ok: bool, good: str, bad: str, event: str = "") -> bool:
        self.findings.append(Finding(rule, ok, good if ok else bad, "" if ok else event))
        return ok


def verify_round(evidence: RoundEvidence) -> list[Finding]:
    """Every finding about the round, passing and failing, in the order of the rules."""
    report = _Report()
    _verify_chain(evidence, report)
    events = list(evidence.events)
    if not events or not isinstance(events[0], Round.Dealt):
        report.check("R10.1", False, "", "the round's record does not start with its deal")
        return report.findings
    dealt: Round.Dealt = events[0]
    names = {id(e): r.name for e, r in zip(events, evidence.records, strict=False)}
    proofs = _Proofs(dealt)
    _verify_deal(dealt, evidence, proofs, report)
    round_: Round | None = None
    outcome: Outcome | None = None  # scored once, at the reveal
    ended = False
    for version, event in enumerate(events, start=1):
        where = names.get(id(event), "")
        if event.originator_version != version:  # the chain finding says why
            report.check(
                CHAIN_RULE,
                False,
                "",
                "the round cannot be replayed past this event: its version is out of sequence",
                where,
            )
            return report.findings
        if round_ is not None:
            if ended:
                report.check("R10.4", False, "", "an event follows the end of the round", where)
            _verify_submission(round_, event, where, report)
            if isinstance(event, Round.Revealed):
                outcome = _verify_reveal(round_, event, where, report)
            if isinstance(event, Round.Revealed | Round.Abandoned):
                ended = True
                report.check(
                    "R12.6",
                    proofs.of(event.server_seed).seed_matches,
                    "the revealed server seed hashes to the commitment published before the deal",
                    "the revealed server seed does not hash to the commitment",
                    where,
                )
        round_ = event.mutate(round_)
    if round_ is not None:
        _verify_results(round_, outcome, evidence, report)
    return report.findings


def _verify_chain(evidence: RoundEvidence, report: _Report) -> None:
    broken = verify_chain(evidence.records)
    for finding in broken:
        report.check(CHAIN_RULE, False, "", finding.message, finding.event)
    if not broken:
        report.check(
            CHAIN_RULE,
            True,
            f"the hash chain of the round's {len(evidence.records)} events is intact",
            "",
        )
    if evidence.receipt and evidence.records:
        head = evidence.records[-1].chain
        report.check(
            CHAIN_RULE,
            head == evidence.receipt,
            "the chain head equals the receipt handed out at the reveal",
            "the chain head differs from the receipt handed out at the reveal: events "
            "were changed or removed since",
            evidence.records[-1].name,
        )


class _Proofs:
    """The fairness proof (``domain.fairness.proof``) of the deal for each revealed seed, once."""

    def __init__(self, dealt: Round.Dealt) -> None:
        self.dealt = dealt
        self._found: dict[str, Proof] = {}

    def of(self, server_seed: str) -> Proof:
        if server_seed not in self._found:
            dealt = self.dealt
            hands = [dealt.hands.get(p, []) for p in dealt.players]
            self._found[server_seed] = prove(
                server_seed,
                dealt.commitment,
                dealt.client_seed,
                dealt.round_id,
                hands,
                in_seat_order(dealt.players, dealt.player_seeds),
            )
        return self._found[server_seed]


def _verify_deal(
    dealt: Round.Dealt, evidence: RoundEvidence, proofs: _Proofs, report: _Report
) -> None:
    report.check(
        "R13",
        dict(dealt.ruleset) == dict(evidence.table_ruleset),
        "the deal records the table's ruleset in full",
        "the ruleset recorded at the deal differs from the table's",
    )
    rules = Ruleset.from_dict(dealt.ruleset)
    try:
        base = round_base(dealt.balances, rules)
        report.check(
            "R8.3",
            base == dealt.base_stake,
            f"the base stake {dealt.base_stake} follows from the balances at the deal",
            f"the base stake should be {base}, the record says {dealt.base_stake}",
        )
    except RuleError as error:
        report.check("R8.4", False, "", f"the deal should have been refused: {error.message}")
    if dealt.player_seeds:
        _verify_player_seeds(dealt, report)
    seed = _published_seed(evidence.events)
    if seed is None:
        return
    if dealt.player_seeds:  # R12.8: the deal mixed them into the client seed
        report.check(
            "R12.8",
            proofs.of(seed).hands_match,
            "the hands recomputed from the server seed, the client seed with the recorded "
            "player seeds mixed in and the round id equal the recorded hands",
            "the recorded hands differ from the deal recomputed from the server seed, the "
            "client seed with the recorded player seeds mixed in and the round id",
        )
        return
    report.check(
        "R12",
        proofs.of(seed).hands_match,
        "the hands recomputed from the server seed, the client seed and the round id "
        "equal the recorded hands",
        "the recorded hands differ from the deal recomputed from the seeds",
    )


def _verify_player_seeds(dealt: Round.Dealt, report: _Report) -> None:
    """R12.8: only players dealt in gave seeds, each a valid one (a seed recorded for anyone
    else would change nothing in the deal, so the recomputed hands cannot show it)."""
    try:
        check_player_seeds(dealt.player_seeds, dealt.players)
    except RuleError as error:
        report.check("R12.8", False, "", f"the deal records invalid player seeds: {error.message}")
        return
    report.check(
        "R12.8",
        True,
        f"the deal records the seeds of {', '.join(dealt.player_seeds)}, each a valid seed "
        "of a player dealt in",
        "",
    )


def _published_seed(events: Sequence[Any]) -> str | None:
    for event in events:
        if isinstance(event, Round.Revealed | Round.Abandoned):
            return str(event.server_seed)
    return None


def _verify_submission(round_: Round, event: Any, where: str, report: _Report) -> None:
    if not isinstance(event, Round.Arranged | Round.SpecialDeclared | Round.PlayerEscaped):
        return
    player = event.player_id
    report.check(
        "R10.1",
        player in round_.active,
        f"{player} was an active player of the round",
        f"{player} was not an active player when this was recorded",
        where,
    )
    if isinstance(event, Round.PlayerEscaped):
        try:
            expected = escape_transfers(
                player,
                round_.active,
                base=round_.base_stake,
                balance_at_deal=round_.balances[player],
                multiple=round_.ruleset.escape_penalty_multiple,
            )
        except (KeyError, ValueError):
            expected = {}
        report.check(
            "R11",
            dict(event.transfers) == expected,
            f"{player}'s escape penalty and its shares follow R11",
            f"{player}'s escape moved {dict(event.transfers)}, R11 gives {expected}",
            where,
        )
        report.check(
            "R7.2",
            sum(event.transfers.values()) == 0,
            "the escape penalty sums to zero",
            "the escape penalty does not sum to zero",
            where,
        )
        return
    report.check(
        "R10.2",
        event.at < round_.deadline,
        f"{player}'s submission came before the deadline",
        f"{player}'s submission at {event.at.isoformat()} came after the deadline "
        f"{round_.deadline.isoformat()}",
        where,
    )
    hand = round_.hand(player) if player in round_.hands else ()
    piles = [parse_cards(event.front), parse_cards(event.middle), parse_cards(event.back)]
    if isinstance(event, Round.Arranged):
        try:
            arrangement = Arrangement.of(*piles, dealt=hand)
            uses = sorted(arrangement.cards) == sorted(hand)
        except RuleError:
            uses = False
        report.check(
            "R4.1",
            uses,
            f"{player}'s arrangement uses exactly their 13 cards",
            f"{player}'s arrangement does not use exactly the cards dealt to them",
            where,
        )
        if uses:
            reason = arrangement.foul_reason(round_.ruleset.wheel)
            report.check(
                "R4.2",
                reason == event.foul_reason,
                f"{player}'s arrangement is rightly recorded as "
                f"{'a foul' if reason else 'not a foul'}",
                f"{player}'s foul is recorded as {event.foul_reason!r}, the rules say {reason!r}",
                where,
            )
        return
    split = Split(*piles) if piles[0] else None
    try:
        play = declare(hand, event.declared, round_.ruleset, split)
        ok = play.special is not None and play.special.id == event.special
        found = play.special.id if play.special else "nothing"
    except RuleError as error:
        ok, found = False, error.message
    report.check(
        "R5",
        ok,
        f"{player}'s declared {event.special} qualifies",
        f"{player}'s declaration of {event.special} does not stand: {found}",
        where,
    )


def _verify_reveal(round_: Round, event: Any, where: str, report: _Report) -> Outcome:
    allowed = event.at >= round_.deadline or not round_.not_ready()
    report.check(
        "R10.3",
        allowed,
        "the reveal came after the deadline or once every active player was ready",
        "the round was revealed before its deadline while "
        f"{', '.join(round_.not_ready())} had no non-foul arrangement",
        where,
    )
    outcome = round_.outcome()  # the submissions and balances the reveal itself had
    points = {s.player_id: s.points for s in outcome.score.players}
    report.check(
        "R6",
        dict(event.points) == points,
        "the recorded points equal the showdown scored again",
        f"the recorded points {dict(event.points)} differ from the showdown scored again {points}",
        where,
    )
    if event.result is not None:  # class version 2 records the showdown itself
        report.check(
            "R6",
            event.result == record(outcome.score),
            "the recorded showdown (every pair's piles, their worth and words) equals the "
            "showdown scored again",
            "the recorded showdown differs from the showdown scored again",
            where,
        )
    report.check(
        "R9",
        dict(event.coins) == outcome.coins,
        "the recorded settlement equals the settlement computed again",
        f"the recorded settlement {dict(event.coins)} differs from {outcome.coins}",
        where,
    )
    report.check(
        "R7.2",
        sum(event.coins.values()) == 0,
        "the settlement sums to zero",
        "the settlement does not sum to zero",
        where,
    )
    return outcome


def _verify_results(
    round_: Round, outcome: Outcome | None, evidence: RoundEvidence, report: _Report
) -> None:
    """R9 against the wallets and the results view; also catches a round whose own record
    lost its end while the wallets or the table still show it."""
    expected: dict[str, list[tuple[str, int]]] = {p: [] for p in round_.players}
    for player, transfers in round_.escaped.items():
        for other, amount in transfers.items():
            kind = "escape_penalty" if other == player else "escape_share"
            expected[other].append((kind, amount))
    for player, coins in round_.coins.items():
        expected[player].append(("settlement", coins))
    if evidence.wallet_moves or round_.escaped or round_.coins:
        moved = {p: sorted(m) for p, m in evidence.wallet_moves.items() if m}
        wanted = {p: sorted(m) for p, m in expected.items() if m}
        report.check(
            "R9",
            moved == wanted,
            "the wallets moved exactly the recorded settlement and escape coins",
            f"the wallets moved {moved} for this round, its record accounts for {wanted}",
        )
    if evidence.table_ended is not None:
        report.check(
            "R10.3",
            evidence.table_ended == round_.ended,
            "the table and the round agree on whether the round is over",
            "the table records the end of this round but the round's record does not"
            if evidence.table_ended
            else "the round's record ends the round but the table never recorded its end",
        )
    if evidence.view is not None and round_.revealed:
        report.check(
            "R6",
            evidence.view == round_result(round_, outcome),
            "the results view equals the result recomputed from the events",
            "the results view differs from the result recomputed from the events",
        )
