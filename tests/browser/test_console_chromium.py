"""The dispute console in a real browser: headless Chromium, driven through chromedriver, opens
the search, looks a player up, follows the recall list to a round, switches to Chinese and takes
screenshots. It fails when the round page lacks the cards, the audit verdict or the fairness
proof, or when the stylesheet did not apply (the Content-Security-Policy allows only it).

Skipped when chromium or chromedriver is missing, except under THIRTEEN_REQUIRE_CHROMIUM=1
(``make browser-check`` installs both and sets it), where it fails instead. Screenshots go to
THIRTEEN_SCREENSHOT_DIR when set, else to the test's temporary directory.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.webdriver import Chromium, browsers
from tests.support.clock import ManualClock
from tests.support.console import Console, Played, play
from tests.support.server import ServerThread

WIDTH = 1280


@pytest.fixture
def chromium() -> Iterator[Chromium]:
    found = browsers()
    if found is None:
        if os.environ.get("THIRTEEN_REQUIRE_CHROMIUM") == "1":
            pytest.fail("THIRTEEN_REQUIRE_CHROMIUM=1 but chromium or chromedriver is missing")
        pytest.skip(
            "chromium and chromedriver are not installed (make browser-check installs them)"
        )
    browser = Chromium(*found, width=WIDTH, height=1000)
    yield browser
    browser.close()


@pytest.fixture
def console(tmp_path: Path) -> Iterator[tuple[Console, Played]]:
    server = ServerThread(tmp_path / "data", {"THIRTEEN_STORE": "sqlite"}, ManualClock())
    played = play(server)
    running = Console(server.address)
    yield running, played
    running.stop()
    server.stop()


def _keep(shots: Path, name: str, png: bytes) -> None:
    assert png[:8] == b"\x89PNG\r\n\x1a\n", f"{name} is not a PNG"
    width, height = struct.unpack(">II", png[16:24])
    assert width >= 400 and height >= 100, (name, width, height)
    (shots / f"{name}.png").write_bytes(png)


def test_staff_find_a_player_follow_a_round_and_see_cards_verdict_and_proof(
    chromium: Chromium, console: tuple[Console, Played], tmp_path: Path
) -> None:
    running, played = console
    shots = Path(os.environ.get("THIRTEEN_SCREENSHOT_DIR") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)

    chromium.open(running.base + "/")
    field = chromium.find("input#player")
    chromium.type(field, played.foul_player)  # a hostile id: markup and quotes
    _keep(shots, "1-search", chromium.screenshot())
    chromium.click(chromium.find("form:has(input#player) button"))

    assert chromium.url.startswith(running.base + "/players/"), chromium.url
    assert chromium.text(chromium.find("h1")).endswith(played.foul_player)  # text, not markup
    assert chromium.find_all("script") == []  # the id was not taken for markup
    recall = chromium.find_all("tr.recall")
    assert len(recall) == 3, "the player's three rounds"
    _keep(shots, "2-player", chromium.screenshot())

    chromium.click(chromium.find("tr.recall a[href^='/rounds/']"))  # the newest round
    assert chromium.url == f"{running.base}/rounds/{played.special}", chromium.url
    shown = played.results[played.special]

    cards = chromium.find_all("#hands .card")
    assert len(cards) == 13 * len(shown.players), "every player's 13 cards are drawn"
    assert chromium.style(cards[0], "width") == "38px", "the stylesheet applied"
    verdict = chromium.text(chromium.find("#verdict .verdict"))
    assert "passes" in verdict, verdict
    proof = chromium.text(chromium.find("#proof"))
    assert shown.commitment in proof and shown.server_seed in proof, proof
    assert proof.count("verified") == 2, proof
    assert "Comparisons" in chromium.text(chromium.find("#comparisons h2"))
    _keep(shots, "3-round", chromium.screenshot())
    _keep(shots, "4-round-hands", chromium.screenshot(chromium.find("#hands")))
    _keep(shots, "5-round-proof", chromium.screenshot(chromium.find("#proof")))

    chromium.click(chromium.find(".lang a[lang='zh']"))
    assert "公平性证明" in chromium.text(chromium.find("#proof h2"))
    assert "审计结论" in chromium.text(chromium.find("#verdict h2"))
    _keep(shots, "6-round-zh", chromium.screenshot())
    chromium.open(running.base + "/")  # the cookie keeps the language
    assert "查找" in chromium.text(chromium.find("h1"))
