"""``domain.rules.limits``: every amount, balance, multiplier and sum has an upper bound, refused
before anything is recorded; and malformed input is refused with a short message."""

from __future__ import annotations

import base64
import contextlib
import json
from datetime import UTC, datetime, timedelta

import grpc
import pytest
from google.protobuf.timestamp_pb2 import Timestamp
from google.rpc import error_details_pb2, status_pb2
from hypothesis import given
from hypothesis import strategies as st

from domain.dealing import deal_record
from domain.errors import CardError, RuleError, RulesetError, SpecialError
from domain.round import Round
from domain.rules import limits
from domain.rules.arrangement import Arrangement
from domain.rules.cards import DECK
from domain.rules.hands import Category
from domain.rules.limits import (
    MAX_BALANCE,
    MAX_ROUND_POINTS,
    MAX_SETTLED_BALANCE,
    MAX_TRANSFER,
    LimitReached,
)
from domain.rules.play import NO_ARRANGEMENT, Play, declare
from domain.rules.ruleset import ALL_PRESETS, FUJIAN, STANDARD, Ruleset, _from_json, resolve
from domain.rules.scoring import Seat, score_round
from domain.rules.settlement import gross, settle
from domain.rules.specials import Special
from domain.rules.stakes import round_base
from domain.rules.suggest import suggest
from domain.wallet import Wallet
from service.rpc import mapping, paging
from service.rpc.status import MAX_MESSAGE_CHARS, to_status

INT64 = 2**63 - 1
INT32 = 2**31 - 1
SHORT = MAX_MESSAGE_CHARS
AT = datetime(2026, 12, 1, tzinfo=UTC)


def wallet_with(balance: int) -> Wallet:
    wallet = Wallet(player_id="A")
    n = 0
    while wallet.balance < balance:
        n += 1
        wallet.credit(f"c{n}", min(MAX_TRANSFER, balance - wallet.balance))
    return wallet


def deal(balances: dict[str, int], ruleset: Ruleset = STANDARD, number: int = 1) -> Round:
    return Round(
        **deal_record(
            round_id="r",
            table_id="t",
            number=number,
            balances=balances,
            server_seed=bytes(32),
            client_seed="",
            ruleset=ruleset,
            at=AT,
        )
    )


# A. Amounts and balances ---------------------------------------------------------------------


def test_the_limits_keep_every_stored_number_far_below_int64() -> None:
    """The arithmetic of the ``domain.rules.limits`` docstring, checked."""
    assert MAX_SETTLED_BALANCE == 6 * MAX_BALANCE < 2**53  # exact as a double too (R14.2.1)
    assert MAX_ROUND_POINTS * MAX_BALANCE <= 2 * 10**18 < 2**63 // 4  # a gross result (R7.1)
    assert limits.MAX_ESCAPE_MULTIPLE * MAX_BALANCE <= 10**18  # a penalty before its cap
    assert 2**63 // MAX_TRANSFER > 9_000_000  # credits before the external account overflows
    assert 2**63 // MAX_ROUND_POINTS > 4 * 10**15  # rounds before summed points overflow
    assert limits.MAX_OPPONENTS * limits.MAX_SPECIAL_POINTS <= MAX_ROUND_POINTS
    assert all(p.limit_violation() is None for p in ALL_PRESETS.values())  # R14.6 too


@pytest.mark.parametrize("amount", [MAX_TRANSFER + 1, 2**62, INT64])
def test_a_transfer_above_max_transfer_is_refused_naming_the_limit(amount: int) -> None:
    wallet = wallet_with(10**6)
    events = len(wallet.pending_events)
    for move in (wallet.credit, wallet.debit):
        with pytest.raises(RuleError, match="at most 1,000,000,000,000 coins") as refused:
            move("x", amount)
        assert refused.value.field == "amount"
    assert (len(wallet.pending_events), wallet.balance) == (events, 10**6)


def test_a_transfer_of_max_transfer_is_accepted() -> None:
    wallet = wallet_with(MAX_TRANSFER)
    wallet.debit("d", MAX_TRANSFER)
    assert wallet.balance == 0


def test_a_credit_that_would_pass_max_balance_is_refused_and_records_nothing() -> None:
    wallet = wallet_with(MAX_BALANCE - 5)
    events = len(wallet.pending_events)
    with pytest.raises(RuleError, match="above the limit of 1,000,000,000,000,000") as refused:
        wallet.credit("over", 6)
    assert refused.value.field == "amount"
    assert "at most 5 more" in refused.value.message
    assert (len(wallet.pending_events), wallet.balance) == (events, MAX_BALANCE - 5)
    wallet.credit("exact", 5)
    assert wallet.balance == MAX_BALANCE


def test_r9_1_a_deal_is_refused_while_a_seated_player_holds_more_than_max_balance() -> None:
    """Winnings may take a balance above MAX_BALANCE (R9.1); the next deal names the player
    and tells them to withdraw, before any event."""
    with pytest.raises(LimitReached, match=r"A \(1,000,000,000,000,001\) holds more") as refused:
        deal({"A": MAX_BALANCE + 1, "B": 1000})
    assert "withdraw" in refused.value.message
    with pytest.raises(LimitReached, match=r"A \(.*\), C \(.*\) hold more"):
        deal({"A": MAX_BALANCE + 1, "B": 1000, "C": 4 * MAX_BALANCE})
    assert deal({"A": MAX_BALANCE, "B": 1000}).balances["A"] == MAX_BALANCE


PAIR = MAX_ROUND_POINTS // limits.MAX_OPPONENTS


@given(
    st.lists(st.integers(48, MAX_BALANCE), min_size=2, max_size=6),
    st.lists(st.integers(-PAIR, PAIR), min_size=15, max_size=15),
    st.sampled_from([1, 48, 10**6]),
)
def test_r9_1_after_a_deal_within_the_limits_every_balance_stays_within_four_max_balances(
    balances: list[int], pair_points: list[int], seat_minimum: int
) -> None:
    """R6.8, R7.1, R8.2, R9.1, R14.2.1: with every balance at most MAX_BALANCE at the deal, up
    to six players and each pair within a fifth of MAX_ROUND_POINTS, no gross result nears
    int64 and no settled balance passes 6 × MAX_BALANCE."""
    rules = STANDARD.with_overrides({"seat_minimum": min(seat_minimum, min(balances))})
    base = round_base({str(i): b for i, b in enumerate(balances)}, rules)
    assert base <= MAX_BALANCE
    points = [0] * len(balances)
    pairs = [(i, j) for i in range(len(balances)) for j in range(i + 1, len(balances))]
    for (i, j), p in zip(pairs, pair_points, strict=False):
        points[i] += p
        points[j] -= p
    assert all(abs(p) <= MAX_ROUND_POINTS for p in points)
    assert all(abs(g) < 2**63 // 4 for g in gross(points, base))
    coins = settle(gross(points, base), balances)
    assert sum(coins) == 0
    assert all(0 <= b + c <= MAX_SETTLED_BALANCE for b, c in zip(balances, coins, strict=True))


# A. Ruleset parameters -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "field", "says"),
    [
        ({"scoop_multiplier": INT32}, "ruleset.scoop_multiplier", "from 1 to 4, got 2147483647"),
        ({"scoop_multiplier": 5}, "ruleset.scoop_multiplier", "from 1 to 4"),  # R14.5.5
        ({"home_run_multiplier": INT32}, "ruleset.home_run_multiplier", "from 1 to 4"),
        ({"home_run_min_players": INT32}, "ruleset.home_run_min_players", "from 3 to 6"),
        ({"home_run_min_players": 2}, "ruleset.home_run_min_players", "from 3 to 6"),
        ({"seat_minimum": INT64}, "ruleset.seat_minimum", "to 1,000,000,000,000,000"),
        ({"base_stake": INT64}, "ruleset.base_stake", "to 1,000,000,000,000,000"),
        ({"escape_penalty_multiple": INT32}, "ruleset.escape_penalty_multiple", "to 1,000,"),
        ({"arrange_seconds": INT32}, "ruleset.arrange_seconds", "from 1 to 86,400"),
        ({"special_points": {"dragon": INT32}}, "ruleset.special_points", "limit of 200"),
        ({"special_points": {"dragon": 201}}, "ruleset.special_points", "dragon scores 201"),
        ({"special_points": {"dragon": 0}}, "ruleset.special_points", "dragon scores 0"),
        (
            {"pile_bonuses": {"middle": {"straight_flush": INT32}}},
            "ruleset.pile_bonuses",
            "middle.straight_flush is worth 2147483647, above the limit of 100",
        ),
        (
            # R14: 5 × (33 × 4 + 3) × 2 × 2 = 2,700 points
            {"preset": "puxian6", "scoop_multiplier": 4, "scoop_bonus": 3},
            "ruleset",
            "win or lose 2,700 points in a round, above the limit of 2,000",
        ),
        (
            {"pile_bonuses": {"back": {"flush": 100}}, "scoop_multiplier": 4},
            "ruleset",
            "2,448 points",
        ),
        (
            {"stake_policy": "fixed", "base_stake": 10**14},  # × seat_minimum 48
            "ruleset.base_stake",
            "needs 4,800,000,000,000,000 coins to sit down",
        ),
        ({"name": "n" * 65}, "ruleset.name", "at most 64 printable characters"),
    ],
)
def test_r13_a_new_tables_parameters_above_their_limits_are_refused(
    overrides: dict[str, object], field: str, says: str
) -> None:
    with pytest.raises(RulesetError) as refused:
        resolve(overrides, strict=True)
    assert refused.value.field == field
    assert says in refused.value.message
    assert len(refused.value.message) <= SHORT


@pytest.mark.parametrize(
    "overrides",
    [
        {"scoop_multiplier": 4},
        {"home_run_multiplier": 4},
        {"special_points": {"supreme_dragon": 200}},
        {"pile_bonuses": {"back": {"straight_flush": 100}}, "scoop_multiplier": 1},
        {"preset": "fujian", "scoop_multiplier": 4, "home_run_multiplier": 4},  # 864 points
        {"preset": "puxian6"},  # R14.6: 1,320 points
        {"preset": "puxian", "horse_both_holders": "stack"},  # one 8h: a factor of 2 at most
        {"escape_penalty_multiple": 1000, "arrange_seconds": 86_400},
        {"stake_policy": "fixed", "base_stake": 10**13, "seat_minimum": 100},
        {"seat_minimum": MAX_BALANCE},
    ],
)
def test_r13_parameters_at_their_limits_are_accepted(overrides: dict[str, object]) -> None:
    ruleset = resolve(overrides, strict=True)
    assert ruleset.max_round_points <= MAX_ROUND_POINTS


def test_r6_max_round_points_bounds_every_pair_by_piles_scoops_home_runs_and_specials() -> None:
    """R6.1–R6.8: three opponents × max(best special, best piles × scoop × home run); R14:
    × the horse, + the scoop bonus, over max_players − 1 opponents."""
    assert STANDARD.max_round_points == 3 * 108
    no_dragons = {"supreme_dragon": 1, "dragon": 1, "twelve_royals": 1}
    flat = STANDARD.with_overrides({"special_points": no_dragons | {"three_quads": 1}})
    assert flat.max_round_points == 3 * 20  # three straight flushes
    plain = STANDARD.with_overrides(
        {"special_points": {s.id: 1 for s, _ in STANDARD.special_points}}
    )
    assert plain.max_round_points == 3 * (3 * 2 * 2)
    assert FUJIAN.with_overrides(
        {"special_points": {s.id: 1 for s, _ in STANDARD.special_points}}
    ).max_round_points == 3 * ((3 + 10 + 5) * 2 * 2)


FRONT = ["three_of_a_kind", "pair", "high_card"]


@st.composite
def scored_rounds(draw: st.DrawFn) -> tuple[Ruleset, list[int]]:
    """Any ruleset the parsers accept, and a random round of 2–4 players under it: random,
    suggested or no arrangements, and specials where the cards hold one."""
    every = [c.id for c in Category]
    bonuses = {
        pile: draw(
            st.dictionaries(
                st.sampled_from(FRONT if pile == "front" else every), st.integers(1, 500)
            )
        )
        for pile in ("front", "middle", "back")
    }
    ruleset = STANDARD.with_overrides(
        {
            "scoop_multiplier": draw(st.integers(1, 12)),
            "home_run_multiplier": draw(st.integers(1, 12)),
            "home_run_min_players": draw(st.integers(2, 4)),
            "foul_counts_for_home_run": draw(st.booleans()),
            "pile_bonuses": bonuses,
            "special_points": draw(
                st.dictionaries(st.sampled_from([s.id for s in Special]), st.integers(0, 500))
            ),
            # R14: the variants that multiply or add
            "horse_card": draw(st.sampled_from(["none", "8h", "As", "2c"])),
            "horse_multiplier": draw(st.integers(2, 4)),
            "horse_both_holders": draw(st.sampled_from(["cancel", "stack"])),
            "scoop_bonus": draw(st.integers(0, 3)),
            "roll_over_counts_as_scoop": draw(st.booleans()),
            "special_order": draw(st.sampled_from(["table", "points"])),
        }
    )
    deck = draw(st.permutations(DECK))
    seats = []
    for k in range(draw(st.integers(2, 4))):
        hand = deck[13 * k : 13 * k + 13]
        how = draw(st.sampled_from(["random", "suggested", "special", "none"]))
        play = NO_ARRANGEMENT
        if how == "suggested":
            play = Play(suggest(hand, ruleset).arrangement)
        elif how != "none":
            play = Play(Arrangement.of(hand[:3], hand[3:8], hand[8:]))
            if how == "special":
                with contextlib.suppress(SpecialError):
                    play = declare(hand, "any", ruleset)
        seats.append(Seat(f"P{k}", play, tuple(hand)))
    return ruleset, score_round(seats, ruleset).points


@given(scored_rounds())
def test_r6_no_player_scores_more_than_max_round_points(scored: tuple[Ruleset, list[int]]) -> None:
    """R6: ``Ruleset.max_round_points``, which a new table's ruleset must keep within
    MAX_ROUND_POINTS, bounds what ``score_round`` gives any player, under any ruleset."""
    ruleset, points = scored
    assert all(abs(p) <= ruleset.max_round_points for p in points)


def test_r13_a_stored_ruleset_above_the_limits_still_loads() -> None:
    """Stored events are forever (STYLE 14): a table opened before a limit existed keeps
    loading; only new tables are held to the limits."""
    data = STANDARD.to_dict() | {
        "scoop_multiplier": INT32,
        "arrange_seconds": INT32,
        "seat_minimum": 2**62,
        "special_points": {"dragon": INT32},
        "pile_bonuses": {"middle": {"straight_flush": INT32}},
        "name": "n" * 1000,
    }
    loaded = Ruleset.from_dict(data)
    assert (loaded.scoop_multiplier, loaded.seat_minimum) == (INT32, 2**62)
    assert _from_json(json.dumps(data, sort_keys=True)) == loaded
    assert loaded.with_overrides({"wheel": "lowest"}).scoop_multiplier == INT32
    assert loaded.limit_violation() is not None


def test_r13_offline_scoring_is_not_held_to_the_limits() -> None:
    """``thirteen score`` stores nothing and counts in Python integers: only a new table
    (``strict``, as OpenTable asks) is held to the limits."""
    assert resolve({"scoop_multiplier": 1000}).max_round_points == 3 * 3 * 1000 * 2
    with pytest.raises(RulesetError, match="from 1 to 4"):
        resolve({"scoop_multiplier": 1000}, strict=True)


def test_a_round_is_not_dealt_under_a_stored_ruleset_that_could_score_past_the_limits() -> None:
    """A table from before the limits loads but deals no round whose points or penalty could
    pass them; its harmless excesses (a long deadline) do not block it."""
    huge = STANDARD.with_overrides({"scoop_multiplier": INT32})
    with pytest.raises(LimitReached, match=r"recorded before the limits .* open a new table"):
        deal({"A": 1000, "B": 1000}, huge)
    penalty = STANDARD.with_overrides({"escape_penalty_multiple": INT32})
    with pytest.raises(LimitReached, match="escape_penalty_multiple"):
        deal({"A": 1000, "B": 1000}, penalty)
    slow = STANDARD.with_overrides({"arrange_seconds": 10**6, "home_run_min_players": 9})
    assert deal({"A": 1000, "B": 1000}, slow).deadline == AT + timedelta(seconds=10**6)


def test_a_table_deals_at_most_max_round_number_rounds() -> None:
    """table.proto carries round numbers as int32."""
    with pytest.raises(LimitReached, match="open a new table"):
        deal({"A": 1000, "B": 1000}, number=limits.MAX_ROUND_NUMBER + 1)
    assert deal({"A": 1000, "B": 1000}, number=limits.MAX_ROUND_NUMBER).number > 0


# B. Malformed input: short messages -------------------------------------------------------------

LONG = "x" * 100_000
WIDE = "水" * 30_000


@pytest.mark.parametrize(
    "spec",
    [
        LONG,
        WIDE,
        {"preset": LONG},
        {LONG: 1},
        {"wheel": LONG},
        {"stake_policy": WIDE},
        {"special_points": {LONG: 1}},
        {"pile_bonuses": {"front": {LONG: 1}}},
        {"pile_bonuses": {LONG: {}}},
        {"scoop_multiplier": 2**200},
        {"scoop_multiplier": LONG},
        {"foul_counts_for_home_run": LONG},
    ],
)
def test_r13_a_hostile_ruleset_is_refused_with_a_short_message(
    spec: str | dict[str, object],
) -> None:
    with pytest.raises(RulesetError) as refused:
        resolve(spec, strict=True)
    assert len(refused.value.message) <= SHORT
    assert len(refused.value.field) <= 100


@pytest.mark.parametrize("text", [LONG, WIDE, " " * 50_000 + "Zz", "\x00" * 1000])
def test_r1_2_an_unknown_card_is_refused_quoting_only_its_start(text: str) -> None:
    with pytest.raises(CardError) as refused:
        mapping.cards(["As", text], "front")
    assert refused.value.field == "front"
    assert refused.value.message.startswith("front[1]: unknown card ")
    assert "write rank then suit" in refused.value.message
    assert len(refused.value.message) <= 150


@pytest.mark.parametrize(
    ("seconds", "nanos"), [(2**62, 0), (-(2**62), 0), (0, -1), (0, 10**9), (253402300800, 0)]
)
def test_a_timestamp_a_datetime_cannot_hold_is_invalid_argument(seconds: int, nanos: int) -> None:
    with pytest.raises(RuleError, match="since must be a time") as refused:
        mapping.moment(Timestamp(seconds=seconds, nanos=nanos), "since")
    assert refused.value.field == "since"


def test_timestamps_at_the_ends_of_the_range_are_accepted() -> None:
    assert mapping.moment(Timestamp(seconds=-62135596800), "since").year == 1
    assert mapping.moment(Timestamp(seconds=253402300799, nanos=999_999_999), "x").year == 9999


@pytest.mark.parametrize("viewer", [LONG, "A\n", "x" * 129])
def test_a_viewer_that_cannot_be_a_player_id_is_invalid_argument(viewer: str) -> None:
    with pytest.raises(RuleError) as refused:
        mapping.viewer(viewer)
    assert refused.value.field == "viewer" and len(refused.value.message) <= SHORT


def test_an_empty_viewer_or_a_player_id_is_a_viewer() -> None:
    assert [mapping.viewer(v) for v in ["", "A", "玩家" * 64]] == ["", "A", "玩家" * 64]


def _status_texts(status: grpc.Status) -> list[str]:
    texts = [status.details]
    for key, value in status.trailing_metadata:
        if key == "grpc-status-details-bin":
            assert isinstance(value, bytes)  # a -bin key's value
            rich = status_pb2.Status.FromString(value)
            texts.append(rich.message)
            for detail in rich.details:
                bad = error_details_pb2.BadRequest()
                if detail.Unpack(bad):
                    texts += [v.description for v in bad.field_violations]
                    texts += [v.field for v in bad.field_violations]
                failure = error_details_pb2.PreconditionFailure()
                if detail.Unpack(failure):
                    texts += [v.description for v in failure.violations]
    return texts


@pytest.mark.parametrize(
    "error",
    [
        RuleError(LONG, field="f"),
        RuleError("😀" * 10_000, field="😀" * 10_000),
        LimitReached(WIDE),
        CardError(WIDE, field=LONG),
    ],
)
def test_to_status_clips_every_text_of_a_refusal(error: RuleError) -> None:
    """The last line of defence: a status whose trailing metadata a client would refuse
    (RESOURCE_EXHAUSTED) can never be built, whatever a message holds."""
    status = to_status(error)
    texts = _status_texts(status)
    assert len(texts) >= 3
    assert all(len(t) <= SHORT for t in texts)
    size = sum(len(k) + len(v) for k, v in status.trailing_metadata)
    assert size + len(status.details.encode()) * 3 < 8 * 1024  # grpc-message is %-encoded


def test_to_status_keeps_a_short_message_whole() -> None:
    status = to_status(LimitReached("cannot deal: A (5) holds more"))
    assert status.code == grpc.StatusCode.FAILED_PRECONDITION
    assert status.details == "cannot deal: A (5) holds more"


# B. Page tokens -----------------------------------------------------------------------------


def _token(payload: str | bytes) -> str:
    raw = payload.encode() if isinstance(payload, str) else payload
    return base64.urlsafe_b64encode(raw).decode()


@pytest.mark.parametrize(
    "page_token",
    [
        _token('{"scope": "t:x", "after": Infinity}'),
        _token('{"scope": "t:x", "after": -Infinity}'),
        _token('{"scope": "t:x", "after": NaN}'),
        _token('{"scope": "t:x", "after": 1e400}'),
        _token('{"scope": "t:x", "after": 1.5}'),
        _token('{"scope": "t:x", "after": 7.0}'),
        _token('{"scope": "t:x", "after": "7"}'),
        _token('{"scope": "t:x", "after": true}'),
        _token('{"scope": "t:x", "after": -1}'),
        _token(f'{{"scope": "t:x", "after": {2**63}}}'),
        _token(f'{{"scope": "t:x", "after": {2**70}}}'),
        _token(f'{{"scope": "t:x", "after": {"9" * 5000}}}'),
        _token('{"scope": "t:x", "after": 7, "more": 1}'),
        _token('{"scope": ["t:x"], "after": 7}'),
        _token("[" * 1500 + "]" * 1500),  # deeper than Python's recursion limit
        _token('{"a":' * 1000 + "1" + "}" * 1000),  # longer than any token we issue
        _token("[7]"),
        _token('"t:x"'),
        _token("7"),
        _token(b"\xff\xfe\xfd\xfc"),
        _token(b"\xef\xbb\xbf{}"),
        "%%%%",
        "水水水水",
        paging.token("t:x", 7).rstrip("="),
        "x" * 100_000,
        paging.token("t:x", 7) + "\n",
        paging.token("t:y", 7),
    ],
)
def test_aip_158_a_malformed_page_token_is_invalid_argument(page_token: str) -> None:
    with pytest.raises(RuleError, match="page_token is not valid") as refused:
        paging.page("t:x", 0, page_token)
    assert refused.value.field == "page_token"


def test_aip_158_a_token_we_issued_continues_where_it_left_off() -> None:
    for after in [0, 1, 2**31, limits.MAX_POSITION]:
        assert paging.page("t:x", 3, paging.token("t:x", after)) == (after, 3)
    assert paging.page("p:" + "玩" * 128, 0, paging.token("p:" + "玩" * 128, 9)) == (9, 50)
    assert len(paging.token("p:" + "\U0001f600" * 128, 2**62)) <= paging.MAX_TOKEN_LENGTH


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(
    st.one_of(
        st.text(),
        st.binary().map(_token),
        st.text().map(_token),
        json_values.map(lambda v: _token(json.dumps(v))),
        st.builds(
            lambda after, scope: _token(json.dumps({"scope": scope, "after": after})),
            json_values,
            st.sampled_from(["t:x", "t:y"]),
        ),
    )
)
def test_aip_158_any_page_token_gives_a_page_or_invalid_argument(page_token: str) -> None:
    """Hypothesis: whatever a caller sends as a token, the answer is a key the stores can hold
    or INVALID_ARGUMENT, never another exception."""
    try:
        after, size = paging.page("t:x", 0, page_token)
    except RuleError as refused:
        assert refused.field == "page_token"
        return
    assert 0 <= after <= limits.MAX_POSITION and size == paging.DEFAULT_PAGE_SIZE
