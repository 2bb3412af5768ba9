"""R12: the provably fair shuffle and deal."""

import hashlib
import hmac

import pytest

from domain.errors import RuleError
from domain.fairness.shuffle import (
    MAX_PLAYER_SEED_LENGTH,
    check_player_seed,
    commitment,
    deal,
    effective_client_seed,
    player_seeds_document,
    shuffled_deck,
    verify_commitment,
    words,
)
from domain.rules.cards import DECK

R12_7 = [
    "Td 3d 2s 2h 4c 6s 5d 4d Kd Jd 3c 8s Qd",
    "8d Ac 2d 5c Jc 7s As 6h 5s 7c Jh 4s 9c",
    "6d Js Ah Tc Qs Kh 3h Qc Ad Kc Th 3s 8h",
    "6c 9h 7d 9d Ts 5h 9s Qh 7h Ks 2c 8c 4h",
]


def test_r12_7_test_vector() -> None:
    hands = deal(bytes(32), "client", "r1", 4)
    assert [" ".join(map(str, h)) for h in hands] == R12_7


def test_r12_1_commitment_is_sha256_hex_of_the_seed() -> None:
    seed = bytes(range(32))
    assert commitment(seed) == hashlib.sha256(seed).hexdigest()


def test_r12_6_revealed_seed_verifies_against_the_commitment() -> None:
    seed = bytes(range(32))
    assert verify_commitment(seed, commitment(seed))
    assert verify_commitment(seed, commitment(seed).upper())
    assert not verify_commitment(bytes(32), commitment(seed))


def test_r12_3_stream_is_hmac_blocks_of_eight_big_endian_words() -> None:
    stream = words(
        b"k" * 32,
        "c",
        "r",
    )
    first = [next(stream) for _ in range(9)]
    block0 = hmac.new(b"k" * 32, b"c:r:0", hashlib.sha256).digest()
    block1 = hmac.new(b"k" * 32, b"c:r:1", hashlib.sha256).digest()
    assert first[:8] == [int.from_bytes(block0[i : i + 4], "big") for i in range(0, 32, 4)]
    assert first[8] == int.from_bytes(block1[:4], "big")


def test_r12_2_client_seed_changes_the_deal() -> None:
    assert shuffled_deck(bytes(32), "a", "r1") != shuffled_deck(bytes(32), "b", "r1")
    assert shuffled_deck(bytes(32), "", "r1") != shuffled_deck(bytes(32), "", "r2")


def test_r12_4_shuffle_is_a_permutation_of_the_canonical_deck() -> None:
    assert sorted(shuffled_deck(b"\x01" * 32, "x", "y")) == list(DECK)


@pytest.mark.parametrize("players", [2, 3, 4])
def test_r12_5_and_r10_1_each_player_gets_thirteen_consecutive_positions(players: int) -> None:
    deck = shuffled_deck(b"\x02" * 32, "c", "r")
    hands = deal(b"\x02" * 32, "c", "r", players)
    assert len(hands) == players
    assert [list(h) for h in hands] == [list(deck[13 * k : 13 * k + 13]) for k in range(players)]


@pytest.mark.parametrize("players", [0, 1, 5])
def test_r10_1_a_deal_is_for_two_to_four_players(players: int) -> None:
    with pytest.raises(ValueError, match="2 to 4 players"):
        deal(bytes(32), "", "r", players)


R12_8 = [
    "4h 9s 7h Tc Jd 7d 4s 6s 6d Kh Ad Ks Jc",
    "9c Js 6h Ah 8d 2s 5h 5s Kc 8h 2c 3s 4d",
    "6c 8c As 2h Qd 7s 9h 7c Jh Ts 8s 5d 3c",
    "Td 5c 4c Kd 3d Qh Qs Th Ac 9d 2d Qc 3h",
]


def test_r12_8_player_seeds_test_vector() -> None:
    seeds = [("p0", "a"), ("p1", "b"), ("p2", ""), ("p3", "d")]
    assert player_seeds_document(seeds) == '[["p0","a"],["p1","b"],["p3","d"]]'
    effective = effective_client_seed("client", seeds)
    assert effective == ("client|287f2050f4f2c1fed48a9f3a58dddf46c588249981197f2e37380410bcb633c3")
    hands = deal(bytes(32), effective, "r1", 4)
    assert [" ".join(map(str, h)) for h in hands] == R12_8


def test_r12_8_without_player_seeds_the_client_seed_is_unchanged() -> None:
    assert effective_client_seed("client", []) == "client"
    assert effective_client_seed("client", [("p0", ""), ("p1", "")]) == "client"
    assert deal(bytes(32), effective_client_seed("client", []), "r1", 4) == deal(
        bytes(32), "client", "r1", 4
    )


def test_r12_8_document_escapes_non_ascii_and_keeps_seat_order() -> None:
    seeds = [("玩家", "种子"), ("b", 'q"\\')]
    assert player_seeds_document(seeds) == (
        '[["\\u73a9\\u5bb6","\\u79cd\\u5b50"],["b","q\\"\\\\"]]'
    )
    swapped = effective_client_seed("", list(reversed(seeds)))
    assert swapped != effective_client_seed("", seeds)  # seat order is part of the document


@pytest.mark.parametrize(
    "seed",
    ["x" * (MAX_PLAYER_SEED_LENGTH + 1), "tab\there", "new\nline", "\x00"],
)
def test_r12_8_a_player_seed_is_printable_and_at_most_64_characters(seed: str) -> None:
    with pytest.raises(RuleError) as raised:
        check_player_seed(seed)
    assert raised.value.field == "player_seed"
    assert len(raised.value.message) < 200


def test_r12_8_the_longest_printable_seed_is_accepted() -> None:
    assert check_player_seed("s" * MAX_PLAYER_SEED_LENGTH) == "s" * MAX_PLAYER_SEED_LENGTH
    assert check_player_seed("种子 🂡") == "种子 🂡"
