"""R10 (and the round's use of R4.3, R8.3, R9, R11, R12) on the pure Round and Table
aggregates: given events, when a command, then events or a refusal that records nothing."""

import copy
from datetime import UTC, datetime, timedelta

import pytest
from eventsourcing.domain import Aggregate

from domain.dealing import deal_record, dealt_round
from domain.errors import PhaseError, RuleError, SeatError, StakeError
from domain.fairness.seeds import KeyRing, derive_seed
from domain.fairness.shuffle import commitment, deal
from domain.round import Round
from domain.rules.ruleset import FUJIAN, PUXIAN, STANDARD, Ruleset
from domain.rules.suggest import suggest
from domain.table import Table
from domain.wallet import InsufficientFunds, Wallet

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
SEED = bytes(range(32))
KEYS = KeyRing.of([SEED])
NONCE = bytes(16)


def dealt(
    players: str = "ABCD", balances: dict[str, int] | None = None, ruleset: Ruleset = STANDARD
) -> Round:
    balances = balances or dict.fromkeys(players, 1000)
    return Round(
        **deal_record(
            round_id="r1",
            table_id="t1",
            number=1,
            balances=balances,
            server_seed=SEED,
            client_seed="c",
            ruleset=ruleset,
            at=T0,
        )
    )


def arrange_well(round_: Round, player: str, at: datetime = T0) -> str | None:
    a = suggest(round_.hand(player), STANDARD).arrangement
    return round_.arrange(player, list(a.front), list(a.middle), list(a.back), at)


def pending_types(aggregate: Aggregate) -> list[str]:
    return [type(e).__name__ for e in aggregate.collect_events()]


def test_r10_1_and_r12_5_a_deal_gives_each_player_thirteen_cards_from_the_seed() -> None:
    round_ = dealt()
    expected = deal(SEED, "c", "r1", 4)
    assert [round_.hand(p) for p in "ABCD"] == list(expected)
    assert round_.commitment == commitment(SEED)
    assert pending_types(round_) == ["Dealt"]


def test_r8_3_the_deal_records_the_base_stake_and_every_balance() -> None:
    round_ = dealt(balances={"A": 5000, "B": 600, "C": 70_000, "D": 900})
    assert round_.base_stake == 10
    assert round_.balances == {"A": 5000, "B": 600, "C": 70_000, "D": 900}


def test_r8_4_the_deal_is_refused_naming_who_is_short() -> None:
    with pytest.raises(StakeError, match=r"B \(47\)"):
        dealt(balances={"A": 500, "B": 47})


@pytest.mark.parametrize(
    "ruleset",
    [STANDARD, FUJIAN, PUXIAN, STANDARD.with_overrides({"wheel": "lowest", "seat_minimum": 7})],
)
def test_r13_a_dealt_round_holds_the_ruleset_it_recorded(ruleset: Ruleset) -> None:
    """R13: the round a deal makes holds the table's ruleset, the one its Dealt event records
    and every copy of the round reads back from that record."""
    record = deal_record(
        round_id="r1",
        table_id="t1",
        number=1,
        balances=dict.fromkeys("AB", 1000),
        server_seed=SEED,
        client_seed="c",
        ruleset=ruleset,
        at=T0,
    )
    round_ = dealt_round(record, ruleset)
    assert round_.ruleset == Ruleset.from_dict(round_.ruleset_data) == ruleset
    assert copy.deepcopy(round_).ruleset == ruleset  # a copy parses it from the record


def test_r10_2_submissions_after_the_deadline_are_refused_and_record_nothing() -> None:
    round_ = dealt()
    round_.collect_events()
    late = T0 + timedelta(seconds=STANDARD.arrange_seconds)
    with pytest.raises(PhaseError, match="deadline"):
        arrange_well(round_, "A", at=late)
    assert pending_types(round_) == []


def test_r10_3_reveal_waits_for_everyone_ready_or_the_deadline() -> None:
    round_ = dealt(players="AB")
    arrange_well(round_, "A")
    with pytest.raises(PhaseError, match="still waiting for a non-foul arrangement from B"):
        round_.reveal(SEED, T0 + timedelta(seconds=1))
    arrange_well(round_, "B")
    outcome = round_.reveal(SEED, T0 + timedelta(seconds=2))
    assert sum(outcome.coins.values()) == 0


def test_r10_3_and_r4_3_at_the_deadline_missing_and_foul_arrangements_are_fouls() -> None:
    round_ = dealt(players="ABC")
    arrange_well(round_, "A")
    a = suggest(round_.hand("B"), STANDARD).arrangement
    reason = round_.arrange("B", list(a.front), list(a.back), list(a.middle), T0)
    assert reason == "middle (full house, 4s over Qs) beats back (high card, A-high)"
    outcome = round_.reveal(SEED, T0 + timedelta(seconds=60))
    fouls = {p.player_id: p.foul for p in outcome.score.players}
    assert fouls == {"A": False, "B": True, "C": True}


def test_r4_3_a_foul_draft_can_be_replaced_until_the_reveal() -> None:
    round_ = dealt(players="AB")
    a = suggest(round_.hand("A"), STANDARD).arrangement
    reason = round_.arrange("A", list(a.front), list(a.back), list(a.middle), T0)
    assert reason == "middle (straight, 5-high (wheel)) beats back (two pair, 9s and 7s)"
    assert round_.not_ready() == ["A", "B"]
    arrange_well(round_, "A")
    assert round_.submissions["A"]["foul_reason"] is None
    assert round_.not_ready() == ["B"]


def test_r10_4_no_command_changes_a_revealed_round() -> None:
    round_ = dealt(players="AB")
    arrange_well(round_, "A")
    arrange_well(round_, "B")
    round_.reveal(SEED, T0)
    round_.collect_events()
    with pytest.raises(PhaseError, match="over"):
        arrange_well(round_, "A")
    with pytest.raises(PhaseError):
        round_.reveal(SEED, T0)
    with pytest.raises(PhaseError):
        round_.escape("A", T0)
    assert pending_types(round_) == []


def test_r12_6_reveal_refuses_a_seed_that_does_not_match_the_commitment() -> None:
    round_ = dealt(players="AB")
    with pytest.raises(RuleError, match="does not match"):
        round_.reveal(bytes(32), T0 + timedelta(seconds=60))


def test_r11_escape_moves_the_penalty_and_leaves_the_others_playing() -> None:
    round_ = dealt(balances={"A": 100, "B": 100, "C": 100, "D": 100})
    transfers = round_.escape("B", T0)
    assert transfers == {"B": -25, "C": 9, "D": 8, "A": 8}
    assert round_.active == ["A", "C", "D"]
    with pytest.raises(PhaseError, match="left"):
        arrange_well(round_, "B")


def test_r11_3_with_fewer_than_two_players_the_round_ends_without_a_showdown() -> None:
    round_ = dealt(players="AB")
    round_.escape("A", T0)
    round_.abandon(SEED, T0)
    assert round_.ended and not round_.revealed and round_.server_seed == SEED.hex()


def test_r9_3_the_outcome_recomputes_identically_from_the_events() -> None:
    round_ = dealt()
    for p in "ABCD":
        arrange_well(round_, p)
    outcome = round_.reveal(SEED, T0)
    replayed: Round | None = None
    for event in round_.collect_events():
        replayed = event.mutate(replayed)
    assert isinstance(replayed, Round)
    assert replayed.outcome() == outcome
    assert replayed.coins == outcome.coins


def test_r10_1_a_table_seats_at_most_four_and_deals_with_at_least_two() -> None:
    table = Table.open("t1", STANDARD, "", KEYS, NONCE, "dealer", T0)
    table.sit_down("A", T0)
    with pytest.raises(PhaseError, match="at least 2"):
        table.start_round("r1", T0)
    for p in "BCD":
        table.sit_down(p, T0)
    with pytest.raises(SeatError, match="full"):
        table.sit_down("E", T0)
    table.start_round("r1", T0)
    with pytest.raises(PhaseError, match="in progress"):
        table.start_round("r2", T0)


def test_r10_1_a_table_knows_every_round_dealt_at_it_and_its_copies_too() -> None:
    table = Table.open("t1", STANDARD, "", KEYS, NONCE, "dealer", T0)
    for p in "AB":
        table.sit_down(p, T0)
    assert not table.has_round("r1")
    table.start_round("r1", T0)
    assert table.has_round("r1") and not table.has_round("r2")
    table.end_round("r1", KEYS, NONCE, T0)
    table.start_round("r2", T0)  # started after the set was made: it is made again
    copied = copy.deepcopy(table)
    assert "_round_set" not in vars(copied)
    assert copied.has_round("r1") and copied.has_round("r2") and table.has_round("r2")


def test_r12_1_a_new_commitment_is_published_whenever_a_round_ends() -> None:
    table = Table.open("t1", STANDARD, "", KEYS, NONCE, "dealer", T0)
    first = table.next_commitment
    for p in "AB":
        table.sit_down(p, T0)
    table.start_round("r1", T0)
    table.end_round("r1", KEYS, bytes([1]) * 16, T0)
    assert table.next_commitment == commitment(derive_seed(SEED, "t1", 2, bytes([1]) * 16)) != first
    assert table.next_seed_key == KEYS.current and table.next_seed_nonce == "01" * 16


def test_r10_6_no_debit_while_in_a_dealt_round_and_one_table_at_a_time() -> None:
    wallet = Wallet(player_id="A")
    wallet.credit("c1", 100)
    wallet.sit_down("t1")
    with pytest.raises(SeatError, match="already seated at table t1"):
        wallet.sit_down("t2")
    wallet.enter_round("r1")
    with pytest.raises(PhaseError, match="not revealed"):
        wallet.debit("d1", 10)
    wallet.settle("r1", -30)
    wallet.debit("d1", 70)
    with pytest.raises(InsufficientFunds):
        wallet.debit("d2", 1)
    assert wallet.balance == 0


def test_r10_5_leaving_between_rounds_is_free() -> None:
    table = Table.open("t1", STANDARD, "", KEYS, NONCE, "dealer", T0)
    table.sit_down("A", T0)
    table.stand_up("A", None, T0)
    assert table.seats == []
