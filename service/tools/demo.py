"""``thirteen demo``: four bots (five or six with ``--ruleset puxian5`` or ``puxian6``, R14.6)
play a few rounds through the real gRPC API, narrated for a person at a terminal.

The bots are plain clients of the public stubs: they credit coins, open a table, sit down
(``demo_game``), and each round deal with a client seed and a seed from each bot (R12.8),
arrange with the suggestion helper (declaring ``any`` when the cards hold a special, R5.4),
reveal, read their balances and check that the deal was fair (R12.6); each bot then checks its
own hand with the revealed seed and the players' seeds (R12.8; the checks are
``demo_fairness``'s). Without an address the demo serves itself, in-process, on a temporary
SQLite store.

Exit status: 0 when every round was played and verified fair; 1 when the service cannot be
reached, refuses a call, or fails the fairness check, with one line on stderr saying which.
"""

from __future__ import annotations

import random
import secrets
import textwrap
from typing import Any, TextIO

import grpc

from domain.rules.arrangement import Arrangement
from domain.rules.cards import format_cards, parse_cards
from domain.rules.ruleset import ALL_PRESETS
from domain.rules.specials import Qualification, Special
from domain.rules.suggest import Suggestion, suggest
from service._generated.thirteen.v1 import table_pb2, wallet_pb2
from service.report.dispute import clauses
from service.report.figures import signed
from service.tools.demo_client import Api, DemoFailed
from service.tools.demo_fairness import check_fairness, check_own_hands
from service.tools.demo_game import Game, finish, set_up, top_up
from service.tools.demo_screen import Screen, plural, wants_colour

NUMBERS = {2: "two", 3: "three", 4: "four", 5: "five", 6: "six"}
FOUL_ROUND = 2  # the round in which one bot submits a foul draft (the last, with fewer rounds)
EXIT_FAILED = 1
WIDTH = 100


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
    copies = game.rules.copies  # R14.2.3: with extra suits a hand may hold a card twice
    suggestions = {
        p: suggest(parse_cards(hands[p], copies=copies), game.rules) for p in game.players
    }
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
        if not s.specials and swapped(s.arrangement).foul_reason(game.rules.pile_order) is not None
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
        for clause in clauses(pair.explanation):
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


def play(
    address: str,
    where: str,
    rounds: int,
    seed: str,
    out: TextIO,
    credentials: grpc.ChannelCredentials | None = None,
    preset: str = "standard",
) -> None:
    """The whole demo against the server at ``address`` (over TLS with ``credentials``), at a
    table of the ``preset`` ruleset (R13, R14.6), with a bot in every seat."""
    screen = Screen(out, colour=wants_colour(out))
    bots = NUMBERS[ALL_PRESETS[preset].max_players]
    screen.line(f"thirteen demo: {bots} bots play {plural(rounds, 'round')} (seed {seed})")
    screen.line(f"server: {where}")
    api = Api(address, credentials)
    try:
        # A fresh tag each run gives fresh players, so one server can host any number of demos.
        game = Game(api, screen, random.Random(seed), tag=secrets.token_hex(2), preset=preset)
        set_up(game)
        for number in range(1, rounds + 1):
            play_round(game, number, rounds)
        finish(game)
    finally:
        api.close()
