"""The dispute console (``thirteen console``) over HTTP: the real console process in front of a
real server on which rounds were played through the API, every page fetched with urllib —
status, content in both languages, hostile ids escaped, errors as pages, read-only."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterable, Iterator
from html import escape
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from domain.fairness.shuffle import effective_client_seed
from domain.rules.cards import parse_cards
from domain.rules.specials import Special
from service._generated.thirteen.v1 import results_pb2, table_pb2
from service.web.markup import link
from tests.e2e.helpers import balance, credit, deal, seated_table, wait_until
from tests.support.clock import ManualClock
from tests.support.console import (
    PLAYER_SEEDS,
    SCRIPT,
    Console,
    Page,
    Played,
    play,
    play_many,
)
from tests.support.server import ServerThread

LONG_TABLE, LONG_PLAYERS, LONG_ROUNDS = "long", ["pat", "quinn"], 26
HEADERS = {  # every header the README's "The page itself" promises, as it writes them
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
    "Server": "thirteen-console",
}
CJK = re.compile(r"[\u4e00-\u9fff]")


class World:
    def __init__(self, data: Path) -> None:
        self.server = ServerThread(data, {"THIRTEEN_STORE": "sqlite"}, ManualClock())
        self.played: Played = play(self.server)
        self.long = play_many(self.server, LONG_TABLE, LONG_PLAYERS, LONG_ROUNDS)
        self.console = Console(self.server.address)

    def close(self) -> None:
        self.console.stop()
        self.server.stop()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    built = World(tmp_path_factory.mktemp("console") / "data")
    yield built
    built.close()


def _e(text: str) -> str:
    return escape(text, quote=True)


def section(page: Page, ident: str) -> str:
    """The HTML of the page's section with that id."""
    found = re.search(rf'id="{ident}".*?</section>', page.text, re.S)
    assert found, f"no section {ident!r} in {page.text[:300]}"
    return found.group(0)


def ok(console: Console, path: str, **headers: str) -> Page:
    page = console.get(path, headers=headers)
    assert page.status == 200, (path, page.status, page.text[:2000], console.log)
    assert page.headers["Content-Type"].startswith("text/html; charset=utf-8")
    return page


def seeded(shown: table_pb2.GetRoundResponse) -> list[tuple[str, str]]:
    """The round's seats with each player's seed (R12.8), as the API lists them."""
    return [(p.player_id, p.player_seed) for p in sorted(shown.players, key=lambda p: p.seat)]


def symbols(cards: Iterable[str]) -> list[str]:
    return [c.symbol() for c in parse_cards(list(cards))]


# --- the search -------------------------------------------------------------------------------


def test_the_search_page_has_a_form_for_a_round_a_player_and_a_table(world: World) -> None:
    page = ok(world.console, "/")
    for name in ("round", "player", "table"):
        assert f'name="{name}"' in page.text
    assert page.text.count('action="/search"') == 3
    assert "<script" not in page.text and " on" not in re.sub(r">[^<]*<", "><", page.text)


@pytest.mark.parametrize("kind", ["round", "player", "table"])
def test_the_search_redirects_to_the_page_of_the_id_given(world: World, kind: str) -> None:
    played = world.played
    given = {"round": played.showdown, "player": played.foul_player, "table": played.table}[kind]
    page = world.console.get(link("/search", **{kind: given}))
    assert page.status == 303
    location = page.headers["Location"]
    prefix, _, segment = location.rpartition("/")
    assert prefix == f"/{kind}s" and unquote(segment) == given  # one segment: "/" encoded too
    assert not set('<>"#?') & set(location)


@pytest.mark.parametrize(
    "query", ["", "?round=&player=", "?round=a&player=b", "?player=%20%20", "?other=x"]
)
def test_a_search_with_no_id_or_several_is_400_with_the_form_again(
    world: World, query: str
) -> None:
    page = world.console.get("/search" + query)
    assert page.status == 400
    assert "Give one id" in page.text and 'action="/search"' in page.text


# --- a player's recall list -------------------------------------------------------------------


def test_a_player_s_recall_list_is_newest_first_with_cards_coins_and_balances(world: World) -> None:
    played, player = world.played, world.played.foul_player
    page = ok(world.console, link("/players", player))
    recall = section(page, "recall")
    order = [played.special, played.foul, played.showdown]  # newest first
    found = [m for m in re.findall(r'href="/rounds/([^"]+)"', recall)]
    assert found == order
    expected = world.server.results.ListPlayerRounds(
        results_pb2.ListPlayerRoundsRequest(player_id=player)
    )
    rows = re.findall(r'<tr class="recall">(.*?)</tr>', recall, re.S)
    assert len(rows) == 3
    for row, want in zip(rows, expected.rounds, strict=True):
        assert want.round_id in row
        assert f'<td class="num">{want.balance_before}</td>' in row
        assert f'<td class="num">{want.balance_after}</td>' in row
        assert f"{want.coins:+d}" in row and f"{want.points:+d}" in row
        for symbol in symbols(want.cards):
            assert f'title="{symbol}"' in row
    foul_row = rows[1]
    assert 'class="badge foul"' in foul_row


def test_the_recall_list_pages_through_next_page_tokens_ten_at_a_time(world: World) -> None:
    seen: list[str] = []
    path = link("/players", "pat")
    pages = 0
    while path:
        page = ok(world.console, path)
        recall = section(page, "recall")
        rows = re.findall(r'href="/rounds/([^"]+)"', recall)
        assert len(rows) == (10 if pages < 2 else 6)
        seen += rows
        following = re.search(r'<a href="([^"]+)" class="next">', recall)
        path = following.group(1).replace("&amp;", "&") if following else ""
        if pages:
            assert 'href="/players/pat">First page</a>' in recall
        pages += 1
    assert pages == 3
    assert seen == list(reversed(world.long))


@pytest.mark.parametrize("token", ["not-a-token", "from-another-listing"])
def test_a_page_token_the_service_does_not_know_is_400(world: World, token: str) -> None:
    if token == "from-another-listing":  # a token the service made, for the long table's list
        table = ok(world.console, link("/tables", LONG_TABLE))
        found = re.search(r'<a href="[^"]*\?page=([^"&]+)" class="next">', table.text)
        assert found, table.text[:2000]
        token = unquote(found.group(1))
    page = world.console.get(link("/players", "pat", page=token))
    assert page.status == 400
    assert "<h1>400 · Bad request</h1>" in page.text
    assert "<p>page_token is not valid for this request</p>" in page.text  # the service's words


@pytest.mark.parametrize("token", ["x" * 4097, "tab\there"])
def test_a_page_token_no_service_could_have_made_is_400_without_asking_it(
    world: World, token: str
) -> None:
    page = world.console.get(link("/players", "pat", page=token))
    assert page.status == 400
    assert "page must be a page token of at most 4096 characters" in page.text


def test_the_player_page_shows_the_balance_now(world: World) -> None:
    page = ok(world.console, link("/players", "bo"))
    assert f"<b>{balance(world.server, 'bo')}</b>" in page.text


# --- a table's rounds -------------------------------------------------------------------------


def test_a_table_lists_its_rounds_in_order_with_each_player_s_result(world: World) -> None:
    played = world.played
    page = ok(world.console, link("/tables", played.table))
    rounds = section(page, "rounds")
    assert re.findall(r'href="/rounds/([^"]+)"', rounds) == [
        played.showdown,
        played.foul,
        played.special,
    ]
    for round_id in (played.showdown, played.foul, played.special):
        for p in played.results[round_id].result.players:
            assert f"{p.points:+d} / {p.coins:+d}" in rounds or p.points == 0


def test_a_long_table_pages_twenty_five_rounds_at_a_time(world: World) -> None:
    first = ok(world.console, link("/tables", LONG_TABLE))
    rounds = re.findall(r'href="/rounds/([^"]+)"', section(first, "rounds"))
    assert rounds == world.long[:25]
    following = re.search(r'<a href="([^"]+)" class="next">', first.text)
    assert following
    second = ok(world.console, following.group(1).replace("&amp;", "&"))
    assert re.findall(r'href="/rounds/([^"]+)"', section(second, "rounds")) == world.long[25:]
    assert 'class="next"' not in second.text


# --- the round page ---------------------------------------------------------------------------


def test_r12_r6_r9_the_round_page_shows_cards_comparisons_coins_proof_and_verdict(
    world: World,
) -> None:
    played = world.played
    round_id = played.showdown
    shown = played.results[round_id]
    page = ok(world.console, link("/rounds", round_id))
    hands = section(page, "hands")
    for player in shown.result.players:
        for symbol in symbols(player.cards):
            assert f'title="{symbol}"' in hands, (player.player_id, symbol)
        assert _e(player.player_id) in hands
    comparisons = section(page, "comparisons")
    for pair in shown.result.pairs:
        first_clause = pair.explanation.split(";")[0].split(". ")[0]
        assert _e(first_clause) in comparisons
    assert comparisons.count('<div class="pair">') == len(shown.result.pairs)
    coins = section(page, "coins")
    for player in shown.result.players:
        gross = player.points * shown.base_stake
        assert f"{gross:+d}" in coins or gross == 0
        assert f"{player.coins:+d}" in coins or player.coins == 0
    proof = section(page, "proof")
    assert shown.commitment in proof and shown.server_seed in proof
    assert _e(repr(shown.client_seed)) in proof
    assert "when the table opened, before the deal" in proof  # R12.1
    for player_id, seed in PLAYER_SEEDS.items():  # R12.8
        assert f"{_e(player_id)} <code>{_e(repr(seed))}</code>" in proof
    assert _e(repr(effective_client_seed(shown.client_seed, seeded(shown)))) in proof
    assert proof.count("✔") == 2
    verdict = section(page, "verdict")
    assert "passes" in verdict and "FAIL" not in verdict
    assert "R12.6" in verdict and "CHAIN" in verdict
    callers = section(page, "callers")
    assert "dealt" in callers and "revealed" in callers
    assert link("/rounds", round_id, "export.json") in page.text


def test_r4_3_r6_3_the_round_page_of_a_foul_names_the_foul_and_the_scoop(world: World) -> None:
    played = world.played
    page = ok(world.console, link("/rounds", played.foul))
    shown = {p.player_id: p for p in played.results[played.foul].result.players}
    foul = shown[played.foul_player]
    assert foul.foul
    hands = section(page, "hands")
    assert f"foul: {_e(foul.foul_reason)}" in hands
    assert "scoop ×2" in section(page, "comparisons")


def test_r5_the_round_page_of_a_special_hand_names_it(world: World) -> None:
    played = world.played
    page = ok(world.console, link("/rounds", played.special))
    shown = {p.player_id: p for p in played.results[played.special].result.players}
    special = Special.from_id(shown[played.special_player].special)
    hands = section(page, "hands")
    assert f"special hand {special.id} ({special.chinese})" in hands
    assert "none: a special hand scores its fixed points" in section(page, "comparisons")


def test_r10_4_a_round_in_progress_is_409_and_shows_no_card(world: World, tmp_path: Path) -> None:
    seated_table(world.server, "busy", {"ria": 1000, "sam": 1000})
    dealt = deal(world.server, "busy", request_id="busy-1")
    page = world.console.get(link("/rounds", dealt.round_id))
    assert page.status == 409
    assert f"round {dealt.round_id} is not over yet" in page.text
    assert 'class="card' not in page.text
    for hand in dealt.hands:
        for symbol in symbols(hand.cards):
            assert f'title="{symbol}"' not in page.text


def test_the_export_downloads_as_json_and_audits_clean_offline(
    world: World, tmp_path: Path
) -> None:
    played = world.played
    page = world.console.get(link("/rounds", played.special, "export.json"))
    assert page.status == 200
    assert page.headers["Content-Type"] == "application/json; charset=utf-8"
    assert page.headers["Content-Disposition"] == (
        f'attachment; filename="round-{played.special}.json"'
    )
    document = json.loads(page.body)
    assert document["round_id"] == played.special
    path = tmp_path / "export.json"
    path.write_bytes(page.body)
    key = world.server.log_key.verifier.vkey
    done = subprocess.run(
        [str(SCRIPT), "audit", "--file", str(path), "--log-public-key", key],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"round {played.special} passes" in done.stdout


# --- both languages ---------------------------------------------------------------------------


def test_every_page_reads_in_chinese_with_lang_zh_and_the_switch_is_kept_in_a_cookie(
    world: World,
) -> None:
    played = world.played
    paths = [
        "/",
        link("/players", played.foul_player),
        link("/tables", played.table),
        link("/rounds", played.showdown),
    ]
    for path in paths:
        page = ok(world.console, path + ("&" if "?" in path else "?") + "lang=zh")
        assert '<html lang="zh-CN">' in page.text
        headings = re.findall(r"<h[12][^>]*>(.*?)</h[12]>", page.text, re.S)
        assert headings and all(CJK.search(h) for h in headings), headings
        assert "lang=zh" in page.headers["Set-Cookie"]
        english = ok(world.console, path)
        assert '<html lang="en">' in english.text and not CJK.search(
            "".join(re.findall(r"<h2[^>]*>(.*?)</h2>", english.text))
        )
    kept = ok(world.console, link("/rounds", played.showdown), Cookie="lang=zh")
    assert "公平性证明" in kept.text and "审计结论" in kept.text and "前墩" in kept.text
    assert "同花" in kept.text or "散牌" in kept.text or "一对" in kept.text  # R2.1 in Chinese
    browser = ok(world.console, "/", **{"Accept-Language": "zh-CN,zh;q=0.9"})
    assert '<html lang="zh-CN">' in browser.text


def test_the_language_switch_links_to_the_same_page_in_the_other_language(world: World) -> None:
    path = link("/players", "pat")
    page = ok(world.console, path)
    switch = re.search(r'<a href="([^"]+)" lang="zh"', page.text)
    assert switch and switch.group(1) == path + "?lang=zh"


# --- hostile ids and errors -------------------------------------------------------------------


def test_hostile_ids_are_escaped_on_every_page(world: World) -> None:
    played = world.played
    for path in (
        link("/players", played.foul_player),
        link("/tables", played.table),
        link("/rounds", played.showdown),
    ):
        page = ok(world.console, path)
        for hostile in (played.foul_player, played.table):
            assert hostile not in page.text
        assert "<script" not in page.text
    page = ok(world.console, link("/rounds", played.showdown))
    assert _e(played.foul_player) in page.text and _e(played.table) in page.text
    assert link("/players", played.foul_player) in page.text  # linked, percent-encoded


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/rounds/%22%3E%3Cscript%3Ealert(1)%3C%2Fscript%3E", 404),
        ("/players/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E", 404),
        ("/tables/%27%3B--", 404),
        ("/rounds/" + "r" * 129, 400),
        ("/players/" + "%3C" * 600, 400),
        ("/rounds/a%00b", 400),
        ("/players/a%0Ab", 400),
        ("/nowhere", 404),
        ("/rounds/x/y", 404),
    ],
)
def test_unknown_bad_and_hostile_ids_are_pages_with_the_id_escaped(
    world: World, path: str, status: int
) -> None:
    page = world.console.get(path)
    assert page.status == status, page.text
    assert page.headers["Content-Type"].startswith("text/html")
    assert "<script" not in page.text and "<img" not in page.text
    assert "Traceback" not in page.text
    assert f"<h1>{status} · " in page.text


def test_ids_a_browser_would_resolve_away_are_linked_in_the_query(world: World) -> None:
    credit(world.server, "..", 100, "dots")
    page = world.console.get("/search?player=..")
    assert (page.status, page.headers["Location"]) == (303, "/players/?id=..")
    page = ok(world.console, "/players/?id=..")
    assert "No round that is over" in page.text
    missing = world.console.get("/rounds/?id=..&part=export.json")
    assert missing.status == 404 and "does not exist" in missing.text


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
@pytest.mark.parametrize("path", ["/", "/search?player=ann", "/players/ann", "/nowhere"])
def test_the_console_is_read_only_every_other_method_is_405(
    world: World, method: str, path: str
) -> None:
    page = world.console.get(path, method=method)
    assert page.status == 405
    assert page.headers["Allow"] == "GET, HEAD"
    assert "read-only" in page.text


def test_head_answers_like_get_without_a_body(world: World) -> None:
    page = world.console.get(link("/players", "pat"), method="HEAD")
    assert (page.status, page.body) == (200, b"")


def test_every_answer_carries_the_security_headers(world: World) -> None:
    played = world.played
    for path, method in [
        ("/", "GET"),
        ("/console.css", "GET"),
        (link("/rounds", played.showdown), "GET"),
        (link("/rounds", played.showdown, "export.json"), "GET"),
        ("/search?round=x", "GET"),
        ("/rounds/nope", "GET"),
        ("/", "POST"),
    ]:
        page = world.console.get(path, method=method)
        for name, value in HEADERS.items():
            assert page.headers[name] == value, (path, name)


def test_the_stylesheet_is_served_and_the_pages_hold_no_script_nor_inline_style(
    world: World,
) -> None:
    css = world.console.get("/console.css")
    assert css.status == 200 and css.headers["Content-Type"] == "text/css; charset=utf-8"
    assert ".card" in css.text
    page = ok(world.console, link("/rounds", world.played.showdown))
    assert "<script" not in page.text and "style=" not in page.text and "<style" not in page.text


def test_a_request_naming_another_host_is_refused_against_dns_rebinding(world: World) -> None:
    page = world.console.get("/", headers={"Host": "attacker.example:8080"})
    assert page.status == 421
    assert "attacker.example" in page.text
    assert world.console.get("/", headers={"Host": "localhost"}).status == 200


# --- the access log -----------------------------------------------------------------------------


def test_every_request_is_one_access_log_line_naming_who_asked_for_what(world: World) -> None:
    """The console shows every hand and balance: each request leaves a structured line with
    the peer and what the proxy in front says about the user, its values clipped and escaped
    (they are the client's to choose)."""
    user = 'staff "A" \\ <ops>' + "x" * 300
    proxied = "203.0.113.7, 10.0.0.1"
    page = world.console.get(
        link("/players", "pat", lang="zh"),
        headers={"X-Forwarded-For": proxied, "X-Forwarded-User": user},
    )
    assert page.status == 200

    def logged() -> list[dict[str, Any]]:
        return [
            line
            for line in world.console.lines("console_request")
            if line.get("forwarded_for") == proxied
        ]

    (line,) = wait_until(logged, "the request's access log line")
    assert (line["method"], line["path"], line["query"]) == ("GET", "/players/pat", "lang=zh")
    assert (line["status"], line["client"], line["level"]) == (200, "127.0.0.1", "info")
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0
    assert line["forwarded_user"] == 'staff "A" \\\\ <ops>' + "x" * (256 - 17) + "…"
    refused = world.console.get("/rounds/nope", method="POST")
    assert refused.status == 405
    wait_until(
        lambda: [
            line
            for line in world.console.lines("console_request")
            if (line["method"], line["path"], line["status"]) == ("POST", "/rounds/nope", 405)
        ],
        "the refused request's line",
    )


# --- the service down, and the command's arguments --------------------------------------------


def test_a_service_that_does_not_answer_is_a_503_page_not_a_traceback(tmp_path: Path) -> None:
    server = ServerThread(tmp_path / "data", {"THIRTEEN_STORE": "sqlite"}, ManualClock())
    address = server.address
    server.stop()  # nothing listens there any more
    console = Console(address)
    try:
        assert console.get("/").status == 200  # the search needs no service
        for path in ("/players/ann", "/tables/t", "/rounds/r", "/rounds/r/export.json"):
            page = console.get(path)
            assert page.status == 503, page.text
            assert f"cannot reach the service at {address}" in page.text
            assert "Traceback" not in page.text
    finally:
        assert console.stop() in (0, -15)
    assert "Traceback" not in console.log


def _console(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), "console", *args], capture_output=True, text=True, timeout=60, check=False
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--listen", "0.0.0.0:8080"], "is not loopback"),
        (["--listen", "nonsense"], "address must be HOST:PORT"),
        (["--address", "x:99999"], "address must be HOST:PORT"),
        (["--cert", "c.pem", "--key", "c.key"], "--cert and --key need --ca"),
        (["--ca", "/nonexistent/ca.pem"], "does not exist"),
        (["--tls-server-name", "thirteen.internal"], "--tls-server-name needs --ca"),
        (["--tls-server-name", "not a name"], "must be a DNS name"),
        (["--max-service-calls", "0"], "must be a whole number from 2 to 64"),
    ],
)
def test_arguments_that_cannot_work_are_one_line_and_status_2(args: list[str], says: str) -> None:
    done = _console(*args)
    assert done.returncode == 2
    assert says in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_allow_remote_listens_beyond_loopback_with_a_warning_and_no_host_check(
    world: World,
) -> None:
    console = Console(world.server.address, "--listen", "0.0.0.0:0", "--allow-remote")
    try:
        assert console.base.startswith("http://0.0.0.0:")
        page = console.get("/", headers={"Host": "console.example"})
        assert page.status == 200  # the proxy in front decides who may come in
        warned = "WARNING listening beyond loopback with no login"
        wait_until(lambda: warned in console.log, "the warning on stderr")
    finally:
        console.stop()


def test_a_port_that_is_taken_is_one_line_and_status_1(world: World) -> None:
    """A well-formed address that cannot be had is exit status 1, as ``serve`` says for its
    gRPC and metrics ports; 2 is for bad input."""
    port = world.console.base.rsplit(":", 1)[1]
    done = _console("--listen", f"127.0.0.1:{port}")
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"thirteen console: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


@pytest.mark.parametrize("host", ["192.0.2.1", "no-such-host.invalid"])  # nobody's; no name
def test_an_address_that_is_not_this_machines_is_one_line_and_status_1(host: str) -> None:
    done = _console("--listen", f"{host}:8080", "--allow-remote")
    assert done.returncode == 1, done.stderr
    said = [line for line in done.stderr.splitlines() if not line.startswith("{")]
    assert len(said) == 1 and said[0].startswith(
        f"thirteen console: cannot listen on {host}:8080: "
    )
    assert "Traceback" not in done.stderr
