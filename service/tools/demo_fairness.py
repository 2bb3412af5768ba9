"""The demo's fairness checks: the revealed seed against the commitment and every hand dealt
(R12.6), and each bot's own hand from the seeds it can see (R12.8); ``domain.fairness.proof``
judges."""

from __future__ import annotations

from typing import Any

from domain.fairness.proof import prove, prove_hand
from domain.fairness.shuffle import effective_client_seed
from domain.rules.ruleset import STANDARD, Ruleset
from service._generated.thirteen.v1 import table_pb2
from service.tools.demo_client import DemoFailed
from service.tools.demo_game import Game


def check_fairness(game: Game, commitment: str, dealt: Any, server_seed: str) -> None:
    """R12.6: the revealed seed hashes to the commitment shown before the deal, and the
    published algorithm reproduces every hand from it."""
    problems = fairness_problems(commitment, dealt, server_seed, game.rules)
    if problems:
        for problem in problems:
            game.screen.line(f"!!! fairness: FAILED: {problem}", 2)
        raise DemoFailed(f"round {dealt.round_id} failed the fairness check: {problems[0]}")
    game.verified += 1
    game.screen.line("fairness: verified", 2)
    game.screen.line(f"server seed revealed: {server_seed}", 4)
    game.screen.line("its SHA-256 is the commitment shown before the deal", 4)
    mixed = effective_client_seed(dealt.client_seed, seat_seeds(dealt))
    players = len(dealt.players)
    deck = f" from the {len(game.rules.deck)}-card deck" if game.rules.extra_suits else ""
    if mixed == dealt.client_seed:
        game.screen.line(
            f'domain.fairness.shuffle.deal(seed, "{mixed}", round id, {players}) reproduces'
            f" every hand{deck}",
            4,
        )
        return
    game.screen.line("with every bot's seed mixed in (R12.8) the client seed is", 4)
    game.screen.line(mixed, 6)
    game.screen.line(
        f"domain.fairness.shuffle.deal(seed, that client seed, round id, {players}) reproduces"
        f" every hand{deck}",
        4,
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
        problem = own_hand_problem(
            commitment, shown, player, seeds[player], hands[player], game.rules
        )
        if problem:
            game.screen.line(f"!!! {player}: FAILED: {problem}", 4)
            raise DemoFailed(f"round {round_id} failed {player}'s own check: {problem}")
        game.screen.line(
            f"{player:<{game.name_width}}  its seed {seeds[player]} is in the round, and its "
            "13 cards follow from the seeds: verified",
            4,
        )


def own_hand_problem(
    commitment: str,
    shown: Any,
    player: str,
    seed: str,
    hand: list[str],
    rules: Ruleset = STANDARD,
) -> str:
    """What does not add up for one player who gave ``seed`` and was dealt ``hand``, in the
    round ``shown`` (a GetRound answer after the reveal) of a table on ``rules`` (its deck,
    R14.2.4); "" when all does (``domain.fairness.proof.prove_hand`` judges)."""
    seats = seat_seeds(shown)
    if dict(seats).get(player) != seed:
        return f"the round records the seed {dict(seats).get(player)!r}, not {seed!r}"
    proof = prove_hand(
        shown.server_seed,
        commitment,
        shown.client_seed,
        shown.round_id,
        seats,
        player,
        hand,
        deck=rules.deck,
        max_players=rules.max_players,
    )
    if not proof.seed_matches:
        return f"SHA-256 of the revealed seed is not the commitment {commitment}"
    if not proof.hands_match:
        return "the seeds do not give the hand it was dealt"
    return ""


def seat_seeds(round_: Any) -> list[tuple[str, str]]:
    """(player_id, player_seed) in seat order, from a Deal or GetRound answer (R12.8)."""
    return [(p.player_id, p.player_seed) for p in sorted(round_.players, key=lambda p: p.seat)]


def fairness_problems(
    commitment: str, dealt: Any, server_seed: str, rules: Ruleset = STANDARD
) -> list[str]:
    """What does not add up between the commitment shown before the deal, the revealed seed
    and the dealt hands of a table on ``rules`` (its deck, R14.2.4; ``domain.fairness.proof``
    judges)."""
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
        deck=rules.deck,
        max_players=rules.max_players,
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
