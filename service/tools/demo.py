"""``thirteen demo``: four bots play a few rounds through the real gRPC API, narrated for a
person at a terminal.

The bots are plain clients of the public stubs: they credit coins, open a table, sit down, and
each round deal with a client seed and a seed from each bot (R12.8), arrange with the suggestion
helper (declaring ``any`` when the cards hold a special, R5.4), reveal, read their balances and
check that the deal was fair (R12.6); each bot then checks its own hand with the revealed seed
and the players' seeds (R12.8).
Without an address the demo serves itself, in-process, on a temporary SQLite store.

Exit status: 0 when every round was played and verified fair; 1 when the service cannot be
reached, refuses a call, or fails the fairness check, with one line on stderr saying which.
"""

from __future__ import annotations

import random
import re
import secrets
import textwrap
from dataclasses import dataclass, field
from typing import Any, TextIO

import grpc

from domain.fairness.proof import prove, prove_hand
from domain.fairness.shuffle import effective_client_seed
from domain.rules.arrangement import Arrangement
from domain.rules.cards import format_cards, parse_cards
from domain.rules.ruleset import Ruleset
from domain.rules.specials import Qualification, Special
from domain.rules.suggest import Suggestion, suggest
from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from service.rpc import mapping
from service.tools.demo_client import Api, DemoFailed
from service.tools.demo_screen import Screen, plural, signed, wants_colour

BOTS = ("alice", "bob", "carol", "dave")
CREDIT = 1000  # a balance of 480–4,799 plays at base 10 (R8.2)
FOUL_ROUND = 2  # the round in which one bot submits a foul draft (the last, with fewer rounds)
EXIT_FAILED = 1
WIDTH = 100
CLAUSE = re.compile(r"; |(?<=\.) ")  # between piles, and between sentences


@dataclass
class Game:
    """One demo run: its table, its players and what the bots know."""

    api: Api
    screen: Screen
    rng: random.Random
    tag: str
    players: list[str] = field(default_factory=list)
    balances: dict[str, int] = field(default_factory=dict)
    table_id: str = ""
    rules: Ruleset = field(default_factory=Ruleset)
    credits: int = 0
    verified: int = 0

    @property
    def name_width(self) -> int:
        return max(len(p) for p in self.players)


def set_up(game: Game) -> None:
    """Credit four wallets, open a table (printing its ruleset), seat everyone."""
    game.players = [f"{name}-{game.tag}" for name in BOTS]
    game.table_id = f"demo-{game.tag}"
    game.screen.heading("Setting up")
    for player in game.players:
        credit(game, player)
    request = table_pb2.OpenTableRequest(
        table_id=game.table_id, ruleset="standard", request_id=f"demo-open-{game.tag}"
    )
    table = game.api.table("OpenTable", request)
    game.rules = mapping.ruleset("standard", table.ruleset_parameters)
    game.screen.line(f"opened table {table.table_id}, ruleset {table.ruleset}:", 2)
    for text in describe_rules(table.ruleset_parameters):
        game.screen.line(text, 4)
    for player in game.players:
        game.api.table(
            "SitDown", table_pb2.SitDownRequest(table_id=game.table_id, player_id=player)
        )
    game.screen.line(f"seated {', '.join(game.players)}", 2)


def credit(game: Game, player: str) -> None:
    game.credits += 1  # each credit its own transfer id: a repeated id would move nothing
    transfer = f"demo-{game.tag}-credit-{game.credits}"
    request = wallet_pb2.CreditRequest(player_id=player, amount=CREDIT, transfer_id=transfer)
    game.balances[player] = game.api.wallet("Credit", request).balance
    game.screen.line(f"credited {CREDIT} coins to {player}: balance {game.balances[player]}", 2)


def describe_rules(p: Any) -> list[str]:
    """The R13 parameters that shape a round, in words."""
    bonus = p.pile_bonuses
    bonuses = "by category (R6.1)" if (bonus.front or bonus.middle or bonus.back) else "none"
    return [
        f"scoop ×{p.scoop_multiplier}, home run ×{p.home_run_multiplier} more"
        f" (at {p.home_run_min_players}+ players), pile bonuses: {bonuses}",
        f"A-2-3-4-5 ranks {p.wheel} among straights; stakes {p.stake_policy.replace('_', ' ')},"
        f" seat minimum {p.seat_minimum} coins; {p.arrange_seconds} s to arrange",
    ]


def top_up(game: Game) -> None:
    """Keep every bot at the seat minimum (R8.4) so a long demo is never refused a deal."""
    for player in game.players:
        if game.balances[player] < game.rules.seat_minimum:
            credit(game, player)


def play_round(game: Game, number: int, total: int) -> None:
    """Deal, arrange, reveal, settle and verify one round."""
    game.screen.heading(f"Round {number} of {total}")
    top_up(game)
    shown = game.api.table("GetTable", table_pb2.GetTableRequest(table_id=game.table_id))
    commitment = shown.next_commitment
    game.screen.line(f"commitment published before the deal: {commitment}", 2)
    client_seed = f"{game.rng.getrandbits(32):08x}"
    game.screen.line(f"our client seed, chosen after seeing it: {client_seed}", 2)
    seeds = player_seeds(game)
    request = table_pb2.DealRequest(
        table_id=game.table_id,
        client_seed=client_seed,
        request_id=f"demo-deal-{number}",
        player_seeds=seeds,
    )
    dealt = game.api.table("Deal", request)
    game.screen.line(f"dealt round {dealt.round_id}", 2)
    game.screen.line(f"base stake: {plural(dealt.base_stake, 'coin')} per point (R8.3)", 2)
    hands = {h.player_id: list(h.cards) for h in dealt.hands}
    show_hands(game, hands)
    arrange_all(game, dealt.round_id, hands, foul_round=number == min(FOUL_ROUND, total))
    revealed = game.api.table("Reveal", table_pb2.RevealRequest(round_id=dealt.round_id))
    show_piles(game, revealed)
    show_pairs(game, revealed)
    show_settlement(game, revealed)
    check_fairness(game, commitment, dealt, revealed.server_seed)
    check_own_hands(game, commitment, seeds, hands, dealt.round_id)


def player_seeds(game: Game) -> dict[str, str]:
    """R12.8: each bot's own seed, chosen on its device after the commitment was shown and
    handed to the dealer with the deal."""
    seeds = {player: f"{game.rng.getrandbits(32):08x}" for player in game.players}
    game.screen.line("each bot's own seed, chosen after seeing it (R12.8):", 2)
    for player, seed in seeds.items():
        game.screen.line(f"{player:<{game.name_width}}  {seed}", 4)
    return seeds


def show_hands(game: Game, hands: dict[str, list[str]]) -> None:
    game.screen.line("hands:", 2)
    for player in game.players:
        game.screen.line(f"{player:<{game.name_width}}  {game.screen.hand(hands[player])}", 4)


def arrange_all(
    game: Game, round_id: str, hands: dict[str, list[str]], *, foul_round: bool
) -> None:
    """Each bot declares its special (R5.4) or arranges as suggested; in the foul round one bot
    first submits a foul draft, then corrects it (R4.3)."""
    game.screen.line("arranging:", 2)
    suggestions = {p: suggest(parse_cards(hands[p]), game.rules) for p in game.players}
    fouler = pick_fouler(game, suggestions) if foul_round else None
    ready = False
    for player, suggestion in suggestions.items():
        if suggestion.specials:
            ready = declare(game, round_id, player, suggestion.specials[0])
        elif player == fouler:
            ready = correct_foul_draft(game, round_id, player, suggestion.arrangement)
        else:
            ready = arrange_as_suggested(game, round_id, player, suggestion.arrangement)
    if ready:
        game.screen.line("everyone has a non-foul arrangement or a declaration (R10.3)", 4)


def pick_fouler(game: Game, suggestions: dict[str, Suggestion]) -> str | None:
    """A bot, chosen by the seed, whose suggestion fouls with middle and back swapped."""
    candidates = [
        player
        for player, s in suggestions.items()
        if not s.specials and swapped(s.arrangement).foul_reason(game.rules.wheel) is not None
    ]
    return game.rng.choice(candidates) if candidates else None


def swapped(arrangement: Arrangement) -> Arrangement:
    return Arrangement(arrangement.front, arrangement.back, arrangement.middle)


def submit(game: Game, round_id: str, player: str, piles: Any, special: str = "") -> Any:
    """One Arrange call; ``piles`` has ``front``, ``middle`` and ``back`` (or is None)."""
    request = table_pb2.ArrangeRequest(round_id=round_id, player_id=player, special=special)
    if piles is not None:
        request.front[:] = format_cards(piles.front)
        request.middle[:] = format_cards(piles.middle)
        request.back[:] = format_cards(piles.back)
    return game.api.table("Arrange", request)


def arrange_as_suggested(game: Game, round_id: str, player: str, arrangement: Arrangement) -> bool:
    response = submit(game, round_id, player, arrangement)
    if response.foul:  # the helper promises never to foul (domain.rules.suggest)
        raise DemoFailed(f"the suggestion for {player} was judged a foul: {response.foul_reason}")
    game.screen.line(f"{player} arranges as the suggestion helper proposes", 4)
    return bool(response.ready_to_reveal)


def correct_foul_draft(game: Game, round_id: str, player: str, arrangement: Arrangement) -> bool:
    """R4.3: a foul is accepted as a draft and may be replaced until the reveal."""
    draft = submit(game, round_id, player, swapped(arrangement))
    game.screen.line(f"{player} submits a foul draft: {draft.foul_reason}", 4)
    game.screen.line(f"the service accepts it as a draft (foul: {str(draft.foul).lower()})", 6)
    fixed = submit(game, round_id, player, arrangement)
    if fixed.foul:
        raise DemoFailed(f"the correction for {player} is still a foul: {fixed.foul_reason}")
    game.screen.line(f"{player} corrects it before the reveal (R4.3):", 4)
    game.screen.line(f"{game.screen.piles(fixed)}  (foul: false)", 6)
    return bool(fixed.ready_to_reveal)


def declare(game: Game, round_id: str, player: str, held: Qualification) -> bool:
    """R5.4: declare ``any``, with the split when the strongest special is a split pattern
    (R5.5); the service plays the strongest special the cards hold."""
    response = submit(game, round_id, player, held.split, special="any")
    played = Special.from_id(response.special)
    game.screen.line(
        f"{player} holds {held.special.id} {held.special.chinese} and declares `any`:"
        f" the service plays {played.id} ({game.rules.points_of(played)} points)",
        4,
    )
    return bool(response.ready_to_reveal)


def show_piles(game: Game, revealed: Any) -> None:
    game.screen.line("showdown (front | middle | back):", 2)
    for result in revealed.players:
        # A special hand that needs no split (R5.5) has no piles: show its thirteen cards.
        text = game.screen.piles(result) if result.front else game.screen.hand(result.cards)
        if result.special:
            text += f"  special: {result.special}"
        if result.foul:
            text += f"  FOUL: {result.foul_reason}"
        game.screen.line(f"{result.player_id:<{game.name_width}}  {text}", 4)


def show_pairs(game: Game, revealed: Any) -> None:
    """Every pair's outcome in the service's words (R6), one pile or sentence a line."""
    game.screen.line("pairs:", 2)
    for pair in revealed.pairs:
        game.screen.line(f"{pair.a} vs {pair.b}", 4)
        for clause in CLAUSE.split(pair.explanation):
            for text in textwrap.wrap(
                clause, WIDTH - 6, break_long_words=False, break_on_hyphens=False
            ):
                game.screen.line(text, 6)


def show_settlement(game: Game, revealed: Any) -> None:
    """Points and settled coins (R9), and each balance as the wallet service now reports it."""
    width = game.name_width
    game.screen.line(f"settlement at base {revealed.base_stake}:", 2)
    game.screen.line(f"{'player':<{width}}  {'points':>6}  {'coins':>6}  {'balance':>7}", 4)
    for result in revealed.players:
        request = wallet_pb2.GetBalanceRequest(player_id=result.player_id)
        balance = game.balances[result.player_id] = game.api.wallet("GetBalance", request).balance
        game.screen.line(
            f"{result.player_id:<{width}}  {signed(result.points):>6}"
            f"  {signed(result.coins):>6}  {balance:>7}",
            4,
        )


def check_fairness(game: Game, commitment: str, dealt: Any, server_seed: str) -> None:
    """R12.6: the revealed seed hashes to the commitment shown before the deal, and the
    published algorithm reproduces every hand from it."""
    problems = fairness_problems(commitment, dealt, server_seed)
    if problems:
        for problem in problems:
            game.screen.line(f"!!! fairness: FAILED: {problem}", 2)
        raise DemoFailed(f"round {dealt.round_id} failed the fairness check: {problems[0]}")
    game.verified += 1
    game.screen.line("fairness: verified", 2)
    game.screen.line(f"server seed revealed: {server_seed}", 4)
    game.screen.line("its SHA-256 is the commitment shown before the deal", 4)
    mixed = effective_client_seed(dealt.client_seed, seat_seeds(dealt))
    if mixed == dealt.client_seed:
        game.screen.line(
            f'domain.fairness.shuffle.deal(seed, "{mixed}", round id, 4) reproduces every hand', 4
        )
        return
    game.screen.line("with every bot's seed mixed in (R12.8) the client seed is", 4)
    game.screen.line(mixed, 6)
    game.screen.line(
        "domain.fairness.shuffle.deal(seed, that client seed, round id, 4) reproduces every hand", 4
    )


def check_own_hands(
    game: Game, commitment: str, seeds: dict[str, str], hands: dict[str, list[str]], round_id: str
) -> None:
    """R12.8: each bot, on its own, reads the round as the service shows it to that bot,
    finds its seed recorded, and recomputes its own hand from the revealed server seed, the
    client seed and every player's seed."""
    game.screen.line("each bot checks its own hand (R12.8):", 2)
    for player in game.players:
        request = table_pb2.GetRoundRequest(round_id=round_id, viewer=player)
        shown = game.api.table("GetRound", request)
        problem = own_hand_problem(commitment, shown, player, seeds[player], hands[player])
        if problem:
            game.screen.line(f"!!! {player}: FAILED: {problem}", 4)
            raise DemoFailed(f"round {round_id} failed {player}'s own check: {problem}")
        game.screen.line(
            f"{player:<{game.name_width}}  its seed {seeds[player]} is in the round, and its "
            "13 cards follow from the seeds: verified",
            4,
        )


def own_hand_problem(commitment: str, shown: Any, player: str, seed: str, hand: list[str]) -> str:
    """What does not add up for one player who gave ``seed`` and was dealt ``hand``, in the
    round ``shown`` (a GetRound answer after the reveal); "" when all does
    (``domain.fairness.proof.prove_hand`` judges)."""
    seats = seat_seeds(shown)
    if dict(seats).get(player) != seed:
        return f"the round records the seed {dict(seats).get(player)!r}, not {seed!r}"
    proof = prove_hand(
        shown.server_seed, commitment, shown.client_seed, shown.round_id, seats, player, hand
    )
    if not proof.seed_matches:
        return f"SHA-256 of the revealed seed is not the commitment {commitment}"
    if not proof.hands_match:
        return "the seeds do not give the hand it was dealt"
    return ""


def seat_seeds(round_: Any) -> list[tuple[str, str]]:
    """(player_id, player_seed) in seat order, from a Deal or GetRound answer (R12.8)."""
    return [(p.player_id, p.player_seed) for p in sorted(round_.players, key=lambda p: p.seat)]


def fairness_problems(commitment: str, dealt: Any, server_seed: str) -> list[str]:
    """What does not add up between the commitment shown before the deal, the revealed seed
    and the dealt hands (``domain.fairness.proof`` judges)."""
    seeds = seat_seeds(dealt)
    seats = [player for player, _ in seeds]
    hands = {h.player_id: list(h.cards) for h in dealt.hands}
    proof = prove(
        server_seed,
        commitment,
        dealt.client_seed,
        dealt.round_id,
        [hands.get(player, []) for player in seats],
        seeds,
    )
    if not proof.seed_readable:
        return [f"the revealed server seed {server_seed!r} is not hex"]
    problems = []
    if not proof.seed_matches:
        problems.append(f"SHA-256 of the revealed seed is not the commitment {commitment}")
    if dealt.commitment != commitment:
        problems.append(f"the round used commitment {dealt.commitment}, not {commitment}")
    for seat in proof.wrong_seats:
        problems.append(f"the hand dealt to {seats[seat]} is not the one the seeds give")
    return problems


def finish(game: Game) -> None:
    """Stand everyone up (between rounds: no penalty, R10.5) and sum up."""
    for player in game.players:
        game.api.table(
            "StandUp", table_pb2.StandUpRequest(table_id=game.table_id, player_id=player)
        )
    game.screen.heading("Done")
    game.screen.line(
        f"{plural(game.verified, 'round')} played at table {game.table_id}, every deal verified"
        " fair; the bots have left the table.",
        2,
    )


def play(
    address: str,
    where: str,
    rounds: int,
    seed: str,
    out: TextIO,
    credentials: grpc.ChannelCredentials | None = None,
) -> None:
    """The whole demo against the server at ``address`` (over TLS with ``credentials``)."""
    screen = Screen(out, colour=wants_colour(out))
    screen.line(f"thirteen demo: four bots play {plural(rounds, 'round')} (seed {seed})")
    screen.line(f"server: {where}")
    api = Api(address, credentials)
    try:
        # A fresh tag each run gives fresh players, so one server can host any number of demos.
        game = Game(api, screen, random.Random(seed), tag=secrets.token_hex(2))
        set_up(game)
        for number in range(1, rounds + 1):
            play_round(game, number, rounds)
        finish(game)
    finally:
        api.close()
