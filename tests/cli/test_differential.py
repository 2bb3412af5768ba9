"""Differential tests: the real ``thirteen`` CLI against the independent oracle.

The oracle (tests/reference/oracle.py) is a naive reimplementation of RULES.md that shares no
code with the engine. Thousands of seeded random rounds (tests/reference/generate.py) go through
one ``thirteen score`` process per batch, and every scored field must match the oracle.
"""

from __future__ import annotations

import json
import subprocess
from collections import Counter
from collections.abc import Sequence
from functools import cache
from typing import Any

import pytest

from tests.support.cli import thirteen

from ..reference import generate, oracle

ROUNDS_SEED, ROUND_COUNT = 20240601, 3000
INVALID_SEED, INVALID_COUNT = 7, 120
SUGGEST_SEED, SUGGEST_COUNT = 11, 160
SHOWN_MISMATCHES = 5


def output_lines(process: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    lines = process.stdout.splitlines()
    try:
        return [json.loads(line) for line in lines]
    except json.JSONDecodeError as error:
        raise AssertionError(
            f"stdout is not JSON lines ({error}); exit {process.returncode}\n"
            f"stdout head: {process.stdout[:2000]}\nstderr: {process.stderr[-4000:]}"
        ) from error


def same(a: object, b: object) -> bool:
    """Equal as JSON (so 1 is not true and 12 is not 12.0)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def differences(expected: dict[str, Any], actual: object) -> list[str]:
    """What differs between the oracle's answer and the CLI's for one line (not explanations)."""
    if not isinstance(actual, dict):
        return ["line: the output is not an object"]
    if "error" in expected:
        message = actual.get("error")
        ok = isinstance(message, str) and message and "players" not in actual
        return [] if ok else ["error: expected {'error': <message>} for this line"]
    if "error" in actual:
        return [f"error: unexpected {actual['error']!r}"]
    problems = []
    players = actual.get("players")
    if not isinstance(players, list) or len(players) != len(expected["players"]):
        return ["players: wrong list"]
    for seat, (want, got) in enumerate(zip(expected["players"], players, strict=True)):
        for key in ("id", "points", "foul", "special", "coins"):
            if (key in want) != (key in got) or not same(want.get(key), got.get(key)):
                problems.append(
                    f"players[{seat}].{key}: oracle {want.get(key, '<absent>')!r},"
                    f" cli {got.get(key, '<absent>')!r}"
                )
    pairs = actual.get("pairs")
    if not isinstance(pairs, list) or len(pairs) != len(expected["pairs"]):
        return [*problems, "pairs: wrong list"]
    for index, (want, got) in enumerate(zip(expected["pairs"], pairs, strict=True)):
        for key in ("a", "b", "points", "piles", "scoop", "home_run"):
            if not same(want[key], got.get(key)):
                problems.append(
                    f"pairs[{index}] {want['a']}-{want['b']} {key}: oracle"
                    f" {want[key]!r}, cli {got.get(key, '<absent>')!r}"
                )
        if not isinstance(got.get("explanation"), str) or not got["explanation"]:
            problems.append(f"pairs[{index}] explanation: not a non-empty string")
    return problems


def mismatch_report(
    lines: Sequence[str], expected: Sequence[dict[str, Any]], actual: Sequence[object]
) -> str:
    """Empty when all lines agree; else counts by field and the first few lines in full."""
    shown: list[str] = []
    fields: Counter[str] = Counter()
    bad = 0
    for number, (line, want, got) in enumerate(zip(lines, expected, actual, strict=True), 1):
        problems = differences(want, got)
        if not problems:
            continue
        bad += 1
        fields.update({p.split(":")[0].split(" ")[-1].split(".")[-1] for p in problems})
        if len(shown) < SHOWN_MISMATCHES:
            shown.append(
                f"--- line {number}\ninput:  {line}\noracle: {json.dumps(want, ensure_ascii=False)}"
                f"\ncli:    {json.dumps(got, ensure_ascii=False)}\n" + "\n".join(problems)
            )
    if not bad:
        return ""
    return (
        f"{bad} of {len(lines)} lines differ from the oracle; fields: {dict(fields)}\n"
        + "\n".join(shown)
    )


# ---------------------------------------------------------------------------------------------
# thirteen score


@cache
def random_round_lines() -> list[str]:
    return generate.round_lines(ROUNDS_SEED, ROUND_COUNT)


@pytest.fixture(scope="module")
def scored() -> tuple[list[str], subprocess.CompletedProcess[str]]:
    lines = random_round_lines()
    return lines, thirteen("score", stdin="".join(line + "\n" for line in lines))


def test_score_writes_one_line_per_input_line(
    scored: tuple[list[str], subprocess.CompletedProcess[str]],
) -> None:
    lines, process = scored
    assert len(process.stdout.splitlines()) == len(lines), process.stderr[-4000:]


def test_score_accepts_every_valid_round(
    scored: tuple[list[str], subprocess.CompletedProcess[str]],
) -> None:
    _, process = scored
    errors = [o for o in output_lines(process) if isinstance(o, dict) and "error" in o][:5]
    assert process.returncode == 0, f"exit {process.returncode}; {errors}; {process.stderr[-4000:]}"


def test_score_matches_the_oracle_on_random_rounds(
    scored: tuple[list[str], subprocess.CompletedProcess[str]],
) -> None:
    lines, process = scored
    actual = output_lines(process)
    assert len(actual) == len(lines), process.stderr[-4000:]
    report = mismatch_report(lines, [oracle.score_line(line) for line in lines], actual)
    if report:
        pytest.fail(report, pytrace=False)


def test_score_answers_bad_lines_with_errors_and_scores_the_rest() -> None:
    bad = generate.invalid_lines(INVALID_SEED, INVALID_COUNT)
    good = random_round_lines()[: len(bad)]
    lines = [line for pair in zip(good, (line for _, line in bad), strict=True) for line in pair]
    process = thirteen("score", stdin="".join(line + "\n" for line in lines))
    actual = output_lines(process)
    assert len(actual) == len(lines), process.stderr[-4000:]
    assert process.returncode == 2, f"exit {process.returncode}"
    assert process.stderr.strip(), "error messages must also go to stderr"
    expected = [oracle.score_line(line) for line in lines]
    assert all("error" in e for e in expected[1::2])
    reasons = {
        number: reason
        for number, (reason, _) in zip(range(2, 2 * len(bad) + 1, 2), bad, strict=True)
    }
    report = mismatch_report(lines, expected, actual)
    for number, reason in reasons.items():  # name the kind of bad input in the report
        report = report.replace(f"--- line {number}\n", f"--- line {number} ({reason})\n")
    if report:
        pytest.fail(report, pytrace=False)


# ---------------------------------------------------------------------------------------------
# thirteen deal


def deal_output(server_seed: str, client_seed: str, round_id: str, players: int) -> dict[str, Any]:
    process = thirteen(
        "deal",
        *("--server-seed", server_seed, "--client-seed", client_seed),
        *("--round-id", round_id, "--players", str(players)),
    )
    assert process.returncode == 0, process.stderr[-4000:]
    [output] = output_lines(process)
    assert isinstance(output, dict)
    return output


def test_deal_reproduces_the_r12_7_test_vector() -> None:
    output = deal_output("00" * 32, "client", "r1", 4)
    assert output["hands"] == oracle.deal(bytes(32), "client", "r1", 4)
    assert output["commitment"] == oracle.commitment(bytes(32))


DEALS = generate.deal_arguments(3, 6)


@pytest.mark.parametrize("arguments", DEALS, ids=[f"deal{i}-{a[3]}p" for i, a in enumerate(DEALS)])
def test_deal_matches_the_oracle_for_random_seeds(arguments: tuple[str, str, str, int]) -> None:
    server_seed, client_seed, round_id, players = arguments
    output = deal_output(*arguments)
    seed = bytes.fromhex(server_seed)
    assert output["commitment"] == oracle.commitment(seed)
    assert output["hands"] == oracle.deal(seed, client_seed, round_id, players)


# ---------------------------------------------------------------------------------------------
# thirteen suggest


def suggest_problems(request: dict[str, Any], answer: object) -> list[str]:
    if not isinstance(answer, dict):
        return ["line: the output is not an object"]
    cards = [oracle.parse_card(card) for card in request["cards"]]
    rules = oracle.parse_ruleset(request.get("ruleset"))
    problems = []
    specials = oracle.qualifying_specials(cards, rules.quad_counts_as_two_pairs)
    if not same(answer.get("specials"), specials):
        problems.append(f"specials: oracle {specials}, cli {answer.get('specials')}")
    arrangement = answer.get("arrangement")
    try:
        assert isinstance(arrangement, dict)
        piles = [arrangement[position] for position in oracle.POSITIONS]
        parsed = [[oracle.parse_card(card) for card in pile] for pile in piles]
    except (AssertionError, KeyError, TypeError, oracle.OracleError):
        return [*problems, f"arrangement: not three piles of cards: {arrangement!r}"]
    if [len(pile) for pile in parsed] != [3, 5, 5]:
        problems.append("arrangement: piles must hold 3, 5 and 5 cards")
    elif sorted(card for pile in parsed for card in pile) != sorted(cards):
        problems.append("arrangement: does not use exactly the 13 cards")
    elif oracle.is_foul(parsed[0], parsed[1], parsed[2], rules.wheel):
        problems.append("arrangement: is a foul (R4.2)")
    if any(
        oracle.card_text(c) != text
        for pile, cs in zip(piles, parsed, strict=True)
        for text, c in zip(pile, cs, strict=True)
    ):
        problems.append("arrangement: cards must be written in the two-letter form (R1.2)")
    return problems


def test_suggest_lists_the_oracles_specials_and_a_legal_arrangement() -> None:
    requests = generate.suggest_lines(SUGGEST_SEED, SUGGEST_COUNT)
    lines = [json.dumps(request, ensure_ascii=False) for request in requests]
    process = thirteen("suggest", stdin="".join(line + "\n" for line in lines))
    answers = output_lines(process)
    assert process.returncode == 0, process.stderr[-4000:]
    assert len(answers) == len(lines)
    failures = [
        f"input: {line}\ncli:   {json.dumps(answer, ensure_ascii=False)}\n" + "\n".join(problems)
        for line, request, answer in zip(lines, requests, answers, strict=True)
        if (problems := suggest_problems(request, answer))
    ]
    if failures:
        shown = "\n".join(failures[:SHOWN_MISMATCHES])
        pytest.fail(f"{len(failures)} of {len(lines)} differ:\n{shown}", pytrace=False)


# ---------------------------------------------------------------------------------------------
# The generator reaches the corners (oracle only: runs even without the CLI)


def features(line: str) -> Counter[str]:
    """Which rule corners one generated round exercises, by the oracle's reading."""
    round_ = json.loads(line)
    result = oracle.score_line(line)
    seen: Counter[str] = Counter()
    rules = oracle.parse_ruleset(round_.get("ruleset"))
    ruleset = round_.get("ruleset")
    seen.update(f"ruleset {k}" for k in (ruleset if isinstance(ruleset, dict) else [ruleset]))
    seen[f"{len(round_['players'])} players"] += 1
    by_id = {p["id"]: p for p in result["players"]}
    for entry, player in zip(round_["players"], result["players"], strict=True):
        seen["foul"] += player["foul"]
        if player["special"]:
            how = "cards" if "cards" in entry else "piles"
            seen[f"special {player['special']}"] += 1
            seen[f"declared {'any' if entry['special'] == 'any' else 'by name'} with {how}"] += 1
        texts = [t for key in ("front", "middle", "back", "cards") for t in entry.get(key, [])]
        seen["fancy card text"] += any(t != oracle.card_text(oracle.parse_card(t)) for t in texts)
        if "front" in entry and "special" not in entry:
            front, middle = (
                oracle.parse_cards(entry[k], n, k) for k, n in (("front", 3), ("middle", 5))
            )
            same_category = oracle.evaluate(front)[0] == oracle.evaluate(middle)[0]
            r3 = oracle.compare_front_with_middle(front, middle, rules.wheel)
            seen["R3 same category, equal"] += same_category and r3 == 0
            seen["R3 same category, front bigger"] += same_category and r3 > 0
    normal = {p["id"] for p in result["players"] if not p["special"] and not p["foul"]}
    for pair in result["pairs"]:
        a, b = by_id[pair["a"]], by_id[pair["b"]]
        if a["special"] and b["special"]:
            seen["special vs special" + (", same" if a["special"] == b["special"] else "")] += 1
        elif a["foul"] and b["foul"]:
            seen["foul vs foul"] += 1
        piles = sorted(pair["piles"])
        seen["roll-over"] += piles in ([0, 0, 1], [0, 1, 1], [-1, 0, 0], [-1, -1, 0])
        seen["tied pile"] += piles.count(0) > 0 and {pair["a"], pair["b"]} <= normal
        seen["home run"] += pair["home_run"]
        seen[f"home run, {len(round_['players'])} players"] += pair["home_run"]
    if wheel_decides(round_):
        seen["wheel against a straight from 6-high to K-high"] += 1
    if "base" in round_:
        seen["base 0"] += round_["base"] == 0
        coins = [p["coins"] for p in result["players"]]
        gross = [p["points"] * round_["base"] for p in result["players"]]
        seen["settlement capped"] += coins != gross and all(
            "balance" in p for p in round_["players"]
        )
        balances = [p.get("balance") for p in round_["players"]]
        if None not in balances:
            seen["settlement leftover tie"] += leftover_tie(gross, balances)
    return seen


def leftover_tie(gross: Sequence[int], balances: Sequence[int]) -> bool:
    """R9.2: winners with equal remainders compete for the last leftover coin."""
    paid = sum(min(-g, b) for g, b in zip(gross, balances, strict=True) if g < 0)
    owed = sum(g for g in gross if g > 0)
    if paid >= owed:
        return False
    winners = [g for g in gross if g > 0]
    leftover = paid - sum(g * paid // owed for g in winners)
    remainders = sorted((g * paid % owed for g in winners), reverse=True)
    return 0 < leftover < len(remainders) and remainders[leftover - 1] == remainders[leftover]


def wheel_decides(round_: dict[str, Any]) -> bool:
    """Some wheel meets a 6- to K-high straight (either kind) at the same pile position."""
    for position in ("middle", "back"):
        tops = set()
        for entry in round_["players"]:
            if position in entry and "special" not in entry:
                cards = oracle.parse_cards(entry[position], 5, position)
                category, key = oracle.evaluate(cards)
                if category in ("straight", "straight_flush"):
                    tops.add(key[0])
        if 13.5 in tops and tops & set(range(6, 14)):
            return True
    return False


def test_generated_rounds_reach_every_corner_of_the_rules() -> None:
    seen: Counter[str] = Counter()
    for line in random_round_lines():
        seen += features(line)
    wanted = [
        *(f"special {s}" for s in oracle.SPECIAL_IDS),
        *(
            f"ruleset {p}"
            for p in (
                "standard",
                "fujian",
                "preset",
                "wheel",
                "scoop_multiplier",
                "home_run_multiplier",
                "home_run_min_players",
                "foul_counts_for_home_run",
                "pile_bonuses",
                "special_points",
                "quad_counts_as_two_pairs",
            )
        ),
        "2 players",
        "3 players",
        "4 players",
        "foul",
        "foul vs foul",
        "roll-over",
        "tied pile",
        "home run, 2 players",
        "home run, 3 players",
        "home run, 4 players",
        "special vs special",
        "special vs special, same",
        "declared any with cards",
        "declared any with piles",
        "declared by name with cards",
        "declared by name with piles",
        "fancy card text",
        "R3 same category, equal",
        "R3 same category, front bigger",
        "wheel against a straight from 6-high to K-high",
        "base 0",
        "settlement capped",
    ]
    thin = {name: seen[name] for name in wanted if seen[name] < 5}
    assert not thin, f"the generator rarely reaches: {thin}"
