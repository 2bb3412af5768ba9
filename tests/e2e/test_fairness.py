"""The provably fair deal as a player checks it (R12): the commitment published before the deal
matches the seed revealed after it, the hands follow from the seed, and the seed never leaves
the service before."""

from __future__ import annotations

import hashlib
from typing import TypeVar

from google.protobuf.message import Message

from domain.fairness.shuffle import deal as shuffle
from domain.rules.cards import format_cards
from service._generated.thirteen.v1 import table_pb2
from tests.e2e.helpers import (
    arrange,
    deal,
    events,
    get_round,
    get_table,
    good_piles,
    hands_of,
    head,
    of_type,
    reveal,
    seated_table,
)
from tests.support.server import ServerThread

_Message = TypeVar("_Message", bound=Message)

PLAYERS = ["A", "B", "C"]


def test_r12_the_revealed_seed_matches_the_prior_commitment_and_reproduces_every_hand(
    server: ServerThread,
) -> None:
    """R12.1: the commitment is published before the deal and a new one after each round;
    R12.6: SHA-256 of the revealed seed is that commitment, and the R12.3-R12.5 shuffle of the
    seed, the client seed and the round id gives the dealt hands in seat order."""
    seated_table(server, "t", dict.fromkeys(PLAYERS, 1000))
    commitments = []
    for number, client_seed in enumerate(["", "chosen after the commitment", "第三"], start=1):
        published = get_table(server, "t").next_commitment
        assert len(published) == 64 and published not in commitments
        commitments.append(published)
        dealt = deal(server, "t", client_seed=client_seed)
        assert (dealt.commitment, dealt.client_seed, dealt.number) == (
            published,
            client_seed,
            number,
        )
        assert dealt.server_seed == ""
        for p in PLAYERS:
            arrange(server, dealt.round_id, p, good_piles(hands_of(dealt)[p]))
        result = reveal(server, dealt.round_id)

        seed = bytes.fromhex(result.server_seed)
        assert len(seed) == 32
        assert hashlib.sha256(seed).hexdigest() == published
        hands = shuffle(seed, client_seed, dealt.round_id, len(PLAYERS))
        assert {p: format_cards(h) for p, h in zip(PLAYERS, hands, strict=True)} == hands_of(dealt)
        assert get_round(server, dealt.round_id).server_seed == result.server_seed
        assert get_table(server, "t").next_commitment != published


def test_r12_1_no_seed_leaves_the_service_before_its_round_is_over(server: ServerThread) -> None:
    """R12.1: neither a round's seed nor the next one appears in any answer — tables, deals,
    arrangements, rounds, lists or streams — before that round is revealed."""
    seated_table(server, "t", dict.fromkeys(PLAYERS, 1000))
    answers: list[bytes] = []

    def keep(message: _Message) -> _Message:
        answers.append(message.SerializeToString())
        return message

    seeds = []
    for _ in range(2):
        mark = head(server)
        keep(get_table(server, "t"))
        dealt = keep(deal(server, "t", client_seed="x"))
        for p in PLAYERS:
            keep(arrange(server, dealt.round_id, p, good_piles(hands_of(dealt)[p])))
            keep(get_round(server, dealt.round_id, p))
        keep(server.tables.ListRounds(table_pb2.ListRoundsRequest(table_id="t")))
        for viewer in ["", *PLAYERS]:
            for message in events(
                server,
                "t",
                # Whose it is not sees it only as submitted (R10.4).
                of_type("HandArranged" if viewer == PLAYERS[-1] else "HandSubmitted", PLAYERS[-1]),
                after=mark,
                viewer=viewer,
            ):
                keep(message)
        before_reveal = list(answers)
        result = reveal(server, dealt.round_id)
        seed = bytes.fromhex(result.server_seed)
        seeds.append(seed)
        for answer in before_reveal:
            assert seed not in answer and result.server_seed.encode() not in answer
        keep(result)
        keep(get_table(server, "t"))
    first, second = seeds
    assert first != second
