"""R12.6: ``domain.fairness.proof.prove``, the one fairness proof the audit, explain and the demo
share."""

from __future__ import annotations

from domain.fairness.proof import prove
from domain.fairness.shuffle import commitment

R12_7 = [  # RULES.md R12.7: server seed 32 zero bytes, client seed "client", round id "r1"
    "Td 3d 2s 2h 4c 6s 5d 4d Kd Jd 3c 8s Qd".split(),
    "8d Ac 2d 5c Jc 7s As 6h 5s 7c Jh 4s 9c".split(),
    "6d Js Ah Tc Qs Kh 3h Qc Ad Kc Th 3s 8h".split(),
    "6c 9h 7d 9d Ts 5h 9s Qh 7h Ks 2c 8c 4h".split(),
]
ZERO = bytes(32)


def test_r12_6_r12_7_the_test_vector_is_proved_fair() -> None:
    proof = prove(ZERO.hex(), commitment(ZERO), "client", "r1", R12_7)
    assert proof.fair and proof.seed_readable and proof.wrong_seats == ()


def test_r12_6_a_seed_that_does_not_hash_to_the_commitment_is_not_fair() -> None:
    proof = prove(ZERO.hex(), commitment(bytes([1]) * 32), "client", "r1", R12_7)
    assert not proof.fair and not proof.seed_matches and proof.hands_match


def test_r12_6_the_commitment_is_compared_whatever_its_case() -> None:
    assert prove(ZERO.hex(), commitment(ZERO).upper(), "client", "r1", R12_7).fair


def test_r12_3_r12_5_a_recorded_hand_the_seeds_do_not_give_is_named_by_its_seat() -> None:
    swapped = [R12_7[1], R12_7[0], *R12_7[2:]]
    proof = prove(ZERO.hex(), commitment(ZERO), "client", "r1", swapped)
    assert proof.seed_matches and not proof.hands_match and proof.wrong_seats == (0, 1)


def test_r12_3_another_client_seed_or_round_id_gives_another_deal() -> None:
    assert not prove(ZERO.hex(), commitment(ZERO), "other", "r1", R12_7).hands_match
    assert not prove(ZERO.hex(), commitment(ZERO), "client", "r2", R12_7).hands_match


def test_r12_5_the_kth_player_gets_positions_13k_on_however_many_were_dealt() -> None:
    assert prove(ZERO.hex(), commitment(ZERO), "client", "r1", R12_7[:2]).fair
    assert prove(ZERO.hex(), commitment(ZERO), "client", "r1", R12_7[1:3]).wrong_seats == (0, 1)


def test_r10_1_no_deal_gives_a_single_hand() -> None:
    proof = prove(ZERO.hex(), commitment(ZERO), "client", "r1", R12_7[:1])
    assert proof.seed_matches and not proof.hands_match and proof.wrong_seats == (0,)


def test_r12_6_a_revealed_seed_that_is_not_hex_proves_nothing() -> None:
    proof = prove("not hex", commitment(ZERO), "client", "r1", R12_7)
    assert not proof.seed_readable and not proof.fair and proof.wrong_seats == (0, 1, 2, 3)
