"""Special hands through the real server (R5, R6.5, R6.6). Deals are random, so each test picks
a client seed whose deal holds the specials it needs (``client_seed_for``)."""

from __future__ import annotations

from collections.abc import Sequence

from domain.rules.cards import Card, format_cards, parse_cards
from domain.rules.specials import (
    SPLIT_PATTERNS,
    Special,
    Split,
    qualifies,
    qualifying,
    split_qualifies,
)
from service._generated.thirteen.v1 import table_pb2
from tests.e2e.helpers import (
    arrange,
    arrange_well,
    balance,
    client_seed_for,
    deal,
    hands_of,
    reveal,
    seated_table,
)
from tests.support.server import ServerThread

# Specials whose check is cheap enough to run on thousands of candidate deals.
_CHEAP = [s for s in Special if s not in SPLIT_PATTERNS] + [Special.THREE_FLUSHES]


def _cheap_special(hand: Sequence[Card]) -> bool:
    return any(qualifies(s, hand) for s in _CHEAP)


def _split_of(reply: table_pb2.ArrangeResponse) -> Split:
    return Split(*(parse_cards(pile) for pile in (reply.front, reply.middle, reply.back)))


def _two_specials_one_a_split(hands: Sequence[Sequence[Card]]) -> bool:
    """One hand holds three flushes, another some other cheaply checked special."""
    flushes = [i for i, h in enumerate(hands) if qualifies(Special.THREE_FLUSHES, h)]
    return any(i != j and _cheap_special(hands[j]) for i in flushes for j in range(len(hands)))


def test_r5_4_specials_declared_by_name_and_as_any_score_by_r6_5_and_r6_6(
    server: ServerThread,
) -> None:
    """R5.4: one player declares three flushes by name, another declares ``any`` and gets the
    strongest special the cards hold; R5.5: the service records a qualifying split for the
    split pattern; R6.5: each special takes its points from every normal hand without
    multiplier; R6.6: between the two specials the stronger takes its own points."""
    players = ["A", "B", "C", "D"]
    seated_table(server, "t", dict.fromkeys(players, 1000))
    seed = client_seed_for(server, "t", "r", 4, _two_specials_one_a_split)
    dealt = deal(server, "t", client_seed=seed, request_id="r")
    hands = {p: parse_cards(cards) for p, cards in hands_of(dealt).items()}
    named = next(p for p in players if qualifies(Special.THREE_FLUSHES, hands[p]))
    anyone = next(p for p in players if p != named and _cheap_special(hands[p]))
    normal = [p for p in players if p not in (named, anyone)]
    strongest = qualifying(hands[anyone])[0].special

    by_name = arrange(server, dealt.round_id, named, special="three_flushes")
    assert (by_name.special, by_name.foul) == ("three_flushes", False)
    assert split_qualifies(Special.THREE_FLUSHES, _split_of(by_name))
    assert sorted(_split_of(by_name).cards) == sorted(hands[named])

    as_any = arrange(server, dealt.round_id, anyone, special="any")
    assert as_any.special == strongest.id
    assert not as_any.ready_to_reveal
    arrange_well(server, dealt, normal)

    result = reveal(server, dealt.round_id)
    by_player = {p.player_id: p for p in result.players}
    assert by_player[named].special == "three_flushes"
    assert (
        list(by_player[named].front),
        list(by_player[named].middle),
        list(by_player[named].back),
    ) == (list(by_name.front), list(by_name.middle), list(by_name.back))
    assert by_player[anyone].special == strongest.id
    flushes = Special.THREE_FLUSHES
    points = {  # R6.5: from each of the two normal hands
        named: len(normal) * flushes.default_points,
        anyone: len(normal) * strongest.default_points,
    }
    if strongest.beats(flushes):  # R6.6
        points[anyone] += strongest.default_points
        points[named] -= strongest.default_points
    elif flushes.beats(strongest):
        points[named] += flushes.default_points
        points[anyone] -= flushes.default_points
    decided_by_specials = [pair for pair in result.pairs if {pair.a, pair.b} & {named, anyone}]
    assert all(list(pair.piles) == [] and not pair.scoop for pair in decided_by_specials)
    for player in (named, anyone):
        assert by_player[player].points == points[player]
    assert sum(p.points for p in result.players) == 0
    assert balance(server, named) == 1000 + by_player[named].coins


def test_r5_5_a_player_may_give_the_split_of_a_split_special_and_it_is_recorded(
    server: ServerThread,
) -> None:
    """R5.5: the qualifying split given with the declaration is recorded as given; the foul rule
    does not apply to it."""
    seated_table(server, "t", {"A": 1000, "B": 1000})
    seed = client_seed_for(
        server, "t", "r", 2, lambda hands: qualifies(Special.THREE_FLUSHES, hands[0]) is not None
    )
    dealt = deal(server, "t", client_seed=seed, request_id="r")
    found = qualifies(Special.THREE_FLUSHES, parse_cards(hands_of(dealt)["A"]))
    assert found is not None and found.split is not None
    # Give the piles in another order than the service would, low cards first.
    split = found.split
    given = (
        format_cards(sorted(split.front)),
        format_cards(sorted(split.middle)),
        format_cards(sorted(split.back)),
    )
    reply = arrange(server, dealt.round_id, "A", given, special="three_flushes")
    assert (reply.special, reply.foul) == ("three_flushes", False)
    assert (list(reply.front), list(reply.middle), list(reply.back)) == given
    arrange_well(server, dealt, ["B"])
    result = reveal(server, dealt.round_id)
    a = next(p for p in result.players if p.player_id == "A")
    assert (a.special, a.foul) == ("three_flushes", False)
    assert (list(a.front), list(a.middle), list(a.back)) == given
    assert a.points == Special.THREE_FLUSHES.default_points  # R6.5: against B's normal hand


def test_r5_6_get_round_tells_the_viewer_which_specials_their_own_hand_qualifies_for(
    server: ServerThread,
) -> None:
    """Only the viewer's own hand carries the list, and only before the round is over."""
    from domain.rules.cards import parse_cards
    from domain.rules.specials import qualifying
    from service._generated.thirteen.v1 import table_pb2 as pb
    from service._generated.thirteen.v1 import wallet_pb2

    for p in "AB":
        server.wallets.Credit(
            wallet_pb2.CreditRequest(player_id=f"q{p}", amount=100, transfer_id=f"q{p}")
        )
    server.tables.OpenTable(pb.OpenTableRequest(table_id="q"))
    for p in "AB":
        server.tables.SitDown(pb.SitDownRequest(table_id="q", player_id=f"q{p}"))
    dealt = server.tables.Deal(pb.DealRequest(table_id="q"))
    seen = server.tables.GetRound(pb.GetRoundRequest(round_id=dealt.round_id, viewer="qA"))
    (hand,) = seen.hands
    expected = [q.special.id for q in qualifying(parse_cards(hand.cards))]
    assert list(hand.qualifying_specials) == expected
    assert all(not h.qualifying_specials for h in dealt.hands)
