"""``thirteen score``, ``suggest`` and ``deal``: the commands that answer from standard input or
their arguments and never open a store."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from domain.errors import RuleError
from domain.fairness.shuffle import (
    SEED_BYTES,
    check_player_seeds,
    commitment,
    effective_client_seed,
    in_seat_order,
    player_seeds_document,
    undealt,
)
from domain.fairness.shuffle import deal as deal_hands
from domain.rules.cards import format_cards
from domain.rules.ruleset import Ruleset, resolve
from service.entrypoints.options import Commands
from service.tools.terminal import EXIT_BAD_INPUT


def json_lines(
    handler: Callable[[Any], dict[str, Any]], stdin: TextIO, stdout: TextIO, stderr: TextIO
) -> int:
    """Answer each input line in order; a bad line yields ``{"error": ...}`` in its place."""
    status = 0
    for number, line in enumerate(stdin, start=1):
        if not line.strip():
            continue
        try:
            result = handler(json.loads(line))
        except json.JSONDecodeError as error:
            result = {
                "error": f"line {number}: malformed JSON: {error.msg} at column {error.colno}"
            }
        except RuleError as error:
            result = {"error": f"line {number}: {error.message}"}
        except RecursionError:  # the parser's own limit: no hand nests this deep
            result = {"error": f"line {number}: malformed JSON: nested too deeply"}
        except ValueError:  # an integer past Python's 4,300 digits: no count is that long
            result = {"error": f"line {number}: malformed JSON: a number is too long"}
        if "error" in result:
            status = EXIT_BAD_INPUT
            print(f"thirteen: {result['error']}", file=stderr)
        stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
        stdout.flush()
    return status


def score(args: argparse.Namespace) -> int:
    from service.tools.score import score_line

    return json_lines(score_line, sys.stdin, sys.stdout, sys.stderr)


def suggest(args: argparse.Namespace) -> int:
    from service.tools.score import suggest_line

    return json_lines(suggest_line, sys.stdin, sys.stdout, sys.stderr)


def deal(args: argparse.Namespace) -> int:
    """R12: recompute a deal from its seeds; with players' seeds (R12.8) from the client seed
    they turn it into. Seats are ``--seat-ids`` or p0, p1, … as in the rule book's test vector
    (R12.7). Under ``--ruleset`` (R14.2) the deck holds its extra suits and a table up to its
    ``max_players``; the cards dealt to no one are printed too (R14.2.4)."""
    try:
        ruleset = _ruleset(args.ruleset)
        seats = _seats(args.players, args.seat_ids, ruleset.max_players)
        given: dict[str, str] = {}
        for player, seed in args.player_seed:
            if player in given:
                raise RuleError(f"--player-seed gives {player!r} two seeds")
            given[player] = seed
        seeds = in_seat_order(seats, check_player_seeds(given, seats))
    except RuleError as error:
        print(f"thirteen deal: {error.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    client_seed = effective_client_seed(args.client_seed, seeds)
    deck, most = ruleset.deck, ruleset.max_players
    hands = deal_hands(
        args.server_seed, client_seed, args.round_id, len(seats), deck=deck, max_players=most
    )
    rest = undealt(args.server_seed, client_seed, args.round_id, len(seats), deck, most)
    out: dict[str, Any] = {"commitment": commitment(args.server_seed)}
    if args.seat_ids:
        out["seats"] = seats
    if client_seed != args.client_seed:
        out["player_seeds"] = player_seeds_document(seeds)
        out["effective_client_seed"] = client_seed
    out["hands"] = [format_cards(h) for h in hands]
    if rest:  # R14.2.4: the positions from 13 × players on
        out["undealt"] = format_cards(rest)
    print(json.dumps(out))
    return 0


def _ruleset(text: str) -> Ruleset:
    """``--ruleset``: a preset name, or a JSON object of parameters as ``thirteen score`` takes
    (docs/reference/scoring-json.md)."""
    spec: Any = text
    if text.lstrip().startswith("{"):
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as error:
            where = f"{error.msg} at column {error.colno}"
            raise RuleError(f"--ruleset: malformed JSON: {where}") from None
        except RecursionError:
            raise RuleError("--ruleset: malformed JSON: nested too deeply") from None
    return resolve(spec)


def _seats(players: int | None, seat_ids: list[str] | None, most: int) -> list[str]:
    """The seats in order: ``seat_ids``, or p0 … p{players-1}; 2 to ``most`` of them (R10.1,
    R14.2.1)."""
    if seat_ids is None:
        if players is None:
            raise RuleError("give --players N or --seat-ids ID ID …")
        if players > most:
            raise RuleError(
                f"--players {players}: the ruleset seats 2 to {most} players (R10.1, R14.2.1)"
            )
        return [f"p{k}" for k in range(players)]
    if not 2 <= len(seat_ids) <= most:
        raise RuleError(
            f"--seat-ids must name 2 to {most} players (R10.1, R14.2.1), got {len(seat_ids)}"
        )
    if len(set(seat_ids)) < len(seat_ids):
        raise RuleError("--seat-ids names a player twice")
    if players is not None and players != len(seat_ids):
        raise RuleError(f"--players {players} but --seat-ids names {len(seat_ids)} players")
    return list(seat_ids)


def register(commands: Commands) -> None:
    """``score``, ``suggest`` and ``deal``."""
    score_parser = commands.add_parser(
        "score", help="score rounds: JSON Lines on stdin, one result line per round"
    )
    score_parser.set_defaults(run=score)
    suggest_parser = commands.add_parser(
        "suggest", help="qualifying specials and an arrangement for 13 cards (JSON Lines)"
    )
    suggest_parser.set_defaults(run=suggest)
    dealer = commands.add_parser("deal", help="recompute a provably fair deal (R12)")
    dealer.add_argument("--server-seed", type=_seed, required=True, help="64 hex digits")
    dealer.add_argument("--client-seed", default="", help="the caller's seed (default empty)")
    dealer.add_argument("--round-id", required=True)
    dealer.add_argument(
        "--players",
        type=_players,
        help="2 to 4 (to the ruleset's max_players, R14.2.1), seated as p0, p1, … "
        "(or give --seat-ids)",
    )
    dealer.add_argument(
        "--seat-ids",
        nargs="+",
        metavar="ID",
        help="the round's player ids in seat order, as GetRound lists them (2 to 4, or to "
        "the ruleset's max_players)",
    )
    dealer.add_argument(
        "--ruleset",
        default="standard",
        metavar="PRESET|JSON",
        help="the table's ruleset: a preset (standard, fujian, puxian, puxian5, puxian6) or a "
        "JSON object of parameters as score takes; its extra suits make the deck (R14.2)",
    )
    dealer.add_argument(
        "--player-seed",
        type=_player_seed,
        action="append",
        default=[],
        metavar="PLAYER=SEED",
        help="a player's seed (R12.8), repeatable; PLAYER is a seat id (p0 … without --seat-ids)",
    )
    dealer.set_defaults(run=deal)


def _seed(text: str) -> bytes:
    try:
        seed = bytes.fromhex(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"server seed {text!r} is not hex") from None
    if len(seed) != SEED_BYTES:
        raise argparse.ArgumentTypeError(
            f"server seed must be {SEED_BYTES} bytes ({2 * SEED_BYTES} hex digits), got {len(seed)}"
        )
    return seed


def _players(text: str) -> int:
    if not text.isdigit() or not 2 <= int(text) <= 6:  # R14.2.1: 6 at most, per ruleset less
        raise argparse.ArgumentTypeError(f"players must be 2 to 6, got {text!r}")
    return int(text)


def _player_seed(text: str) -> tuple[str, str]:
    player, sep, seed = text.partition("=")
    if not sep or not player:
        raise argparse.ArgumentTypeError(f"player seed must be PLAYER=SEED, got {text!r}")
    return player, seed
