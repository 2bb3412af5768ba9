"""R12.1 without a seed at rest (issue 11): server seeds derived from a seed key
(``domain.fairness.seeds``), and a table that commits with the key id and nonce instead of the seed;
a table stored by the first version (the seed in clear) deals that seed once and then moves on."""

from __future__ import annotations

import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from eventsourcing.persistence import (
    DatetimeAsISO,
    JSONTranscoder,
    Mapper,
    StoredEvent,
    UUIDAsHex,
)
from hypothesis import given
from hypothesis import strategies as st

from domain.fairness.seeds import (
    KeyRing,
    SeedKeyMissing,
    commit,
    derive_seed,
    key_id,
)
from domain.fairness.shuffle import commitment, deal
from domain.rules.ruleset import STANDARD
from domain.table import Table

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
KEY = bytes(range(32))
NONCE = bytes(range(16))


def test_r12_1_the_derivation_test_vector() -> None:
    """The derivation written out by hand: HMAC-SHA256 over length-prefixed fields."""
    message = b"".join(
        len(part).to_bytes(4, "big") + part
        for part in (b"thirteen/server-seed/v1", b"t", (1).to_bytes(8, "big"), bytes(16))
    )
    expected = hmac.new(bytes(32), message, hashlib.sha256).digest()
    assert derive_seed(bytes(32), "t", 1, bytes(16)) == expected
    assert expected.hex() == "c8dbcb16bb659d108c88a7dba72a27a96a6b7307513e658aaf1ec7d365cc4561"
    assert key_id(bytes(32)) == "51b8bd9b720a8e4f"


def test_r12_7_the_shuffle_test_vector_is_unchanged() -> None:
    hands = deal(bytes(32), "client", "r1", 4)
    assert " ".join(map(str, hands[0])) == "Td 3d 2s 2h 4c 6s 5d 4d Kd Jd 3c 8s Qd"


@given(
    st.tuples(st.binary(min_size=32, max_size=32), st.text(max_size=8), st.integers(1, 2**31)),
    st.binary(min_size=16, max_size=16),
)
def test_r12_1_every_input_changes_the_seed(inputs: tuple[bytes, str, int], nonce: bytes) -> None:
    key, table_id, number = inputs
    seed = derive_seed(key, table_id, number, nonce)
    assert len(seed) == 32
    others = {
        derive_seed(bytes(b ^ 1 for b in key), table_id, number, nonce),
        derive_seed(key, table_id + "x", number, nonce),
        derive_seed(key, table_id, number + 1, nonce),
        derive_seed(key, table_id, number, bytes(b ^ 1 for b in nonce)),
    }
    assert seed not in others and len(others) == 4


def test_r12_1_fields_cannot_run_into_each_other() -> None:
    """Each field is length-prefixed: moving bytes from the table id to the nonce changes the
    message, so a table id reused with another nonce never gives a seed of another table."""
    assert derive_seed(KEY, "ab", 1, b"c") != derive_seed(KEY, "a", 1, b"bc")


def test_a_key_ring_names_keys_by_fingerprint_and_never_shows_them() -> None:
    old, new = bytes(32), KEY
    ring = KeyRing.of([new, old])
    assert ring.current == key_id(new) and ring.ids == (key_id(new), key_id(old))
    assert ring.key(key_id(old)) == old
    shown = repr(ring) + str(ring)
    assert new.hex() not in shown and old.hex() not in shown and "\\x" not in shown
    with pytest.raises(SeedKeyMissing, match="'0123456789abcdef' is not in") as refused:
        ring.key("0123456789abcdef")
    assert new.hex() not in str(refused.value)


def test_r12_1_a_table_commits_with_key_id_and_nonce_and_no_seed() -> None:
    ring = KeyRing.of([KEY])
    table = Table.open("t", STANDARD, "", ring, NONCE, "dealer-1", T0)
    (opened,) = table.collect_events()
    assert isinstance(opened, Table.Opened)
    assert (opened.server_seed, opened.seed_key, opened.seed_nonce) == (
        "",
        ring.current,
        NONCE.hex(),
    )
    assert opened.dealer == table.dealer == "dealer-1"
    seed = derive_seed(KEY, "t", 1, NONCE)
    assert opened.commitment == commitment(seed) == commit(ring, "t", 1, NONCE).commitment
    assert seed.hex() not in json.dumps(vars(opened), default=str)
    assert table.committed_seed(ring) == seed


def test_r12_1_each_round_of_a_table_has_its_own_seed() -> None:
    ring = KeyRing.of([KEY])
    table = Table.open("t", STANDARD, "", ring, NONCE, "", T0)
    for player in "AB":
        table.sit_down(player, T0)
    seeds = []
    for n in range(1, 4):
        assert table.committed_number == n
        table.start_round(f"r{n}", T0)
        assert table.committed_number == n  # the round in progress keeps its commitment
        seeds.append(table.committed_seed(ring))
        table.end_round(f"r{n}", ring, bytes([n]) * 16, T0)
    assert seeds[1] == derive_seed(KEY, "t", 2, bytes([1]) * 16)
    assert len(set(seeds)) == 3


def test_r12_1_a_key_file_without_the_commitments_key_cannot_give_the_seed() -> None:
    table = Table.open("t", STANDARD, "", KeyRing.of([KEY]), NONCE, "", T0)
    with pytest.raises(SeedKeyMissing, match=key_id(KEY)):
        table.committed_seed(KeyRing.of([bytes(32)]))


def _mapper() -> Mapper[Any]:
    transcoder = JSONTranscoder()
    for transcoding in (UUIDAsHex(), DatetimeAsISO()):
        transcoder.register(transcoding)
    return Mapper(transcoder=transcoder)


def _restored(stored: StoredEvent, state: dict[str, Any]) -> StoredEvent:
    """``stored`` with its state as the first version would have written it."""
    return StoredEvent(
        stored.originator_id, stored.originator_version, stored.topic, json.dumps(state).encode()
    )


def test_stored_events_are_forever_a_first_version_table_deals_its_clear_seed_then_moves_on() -> (
    None
):
    """STYLE 14: ``Opened`` and ``RoundEnded`` of class version 1 held the next seed in clear
    and no key id, dealer or class version. They upcast to no key and no dealer; the table deals
    that seed, and the round's end commits under the current key, without a seed."""
    mapper = _mapper()
    ring = KeyRing.of([KEY])
    clear = bytes([7]) * 32
    table = Table.open("t", STANDARD, "", ring, NONCE, "", T0)
    stored = mapper.to_stored_event(table.collect_events()[0])
    state = json.loads(stored.state)
    assert state["class_version"] == 2
    for field in ("class_version", "seed_key", "seed_nonce", "dealer"):
        del state[field]
    state.update(commitment=commitment(clear), server_seed=clear.hex())
    old = mapper.to_domain_event(_restored(stored, state))
    assert isinstance(old, Table.Opened)
    assert (old.seed_key, old.seed_nonce, old.dealer) == ("", "", "")
    mutated = old.mutate(None)
    assert mutated is not None
    table = mutated
    assert table.dealer == "" and table.clear_seed == clear.hex()
    assert table.committed_seed(KeyRing.of([bytes(32)])) == clear  # no key needed for it
    for player in "AB":
        table.sit_down(player, T0)
    table.start_round("r1", T0)
    table.end_round("r1", ring, NONCE, T0)
    ended = table.collect_events()[-1]
    assert isinstance(ended, Table.RoundEnded)
    assert (ended.server_seed, ended.seed_key) == ("", ring.current)
    assert table.clear_seed == ""
    assert table.committed_seed(ring) == derive_seed(KEY, "t", 2, NONCE)


def test_stored_events_are_forever_a_first_version_round_end_upcasts_to_no_key() -> None:
    mapper = _mapper()
    ring = KeyRing.of([KEY])
    table = Table.open("t", STANDARD, "", ring, NONCE, "", T0)
    for player in "AB":
        table.sit_down(player, T0)
    table.start_round("r1", T0)
    table.end_round("r1", ring, NONCE, T0)
    stored = mapper.to_stored_event(table.collect_events()[-1])
    state = json.loads(stored.state)
    del state["class_version"], state["seed_key"], state["seed_nonce"]
    state["server_seed"] = "07" * 32
    old = mapper.to_domain_event(_restored(stored, state))
    assert isinstance(old, Table.RoundEnded)
    assert (old.server_seed, old.seed_key, old.seed_nonce) == ("07" * 32, "", "")
