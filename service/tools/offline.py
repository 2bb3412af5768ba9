"""``thirteen score``, ``suggest`` and ``deal``: the commands that answer from standard input or
their arguments and never open a store."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any, TextIO

from domain.cards import format_cards
from domain.errors import RuleError
from domain.shuffle import commitment
from domain.shuffle import deal as deal_hands
from service.tools.console import EXIT_BAD_INPUT
from service.tools.score import score_line, suggest_line


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
        if "error" in result:
            status = EXIT_BAD_INPUT
            print(f"thirteen: {result['error']}", file=stderr)
        stdout.write(json.dumps(result, ensure_ascii=False) + "\n")
        stdout.flush()
    return status


def score(args: argparse.Namespace) -> int:
    return json_lines(score_line, sys.stdin, sys.stdout, sys.stderr)


def suggest(args: argparse.Namespace) -> int:
    return json_lines(suggest_line, sys.stdin, sys.stdout, sys.stderr)


def deal(args: argparse.Namespace) -> int:
    """R12: recompute a deal from its seeds."""
    hands = deal_hands(args.server_seed, args.client_seed, args.round_id, args.players)
    out = {"commitment": commitment(args.server_seed), "hands": [format_cards(h) for h in hands]}
    print(json.dumps(out))
    return 0
