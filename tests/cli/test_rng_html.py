"""``thirteen rng test --html`` and ``--repeats`` through the real console script: the page
parses as HTML, holds its plots as inline SVG and nothing from elsewhere, and states the very
numbers of the text report of the same run (R12.3–R12.5); bad paths are refused before the
run; progress with the time left shows on a terminal or with ``--progress``, never in the
report; and headless Chromium draws the page."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.support.chromium import png_pixels, screenshot
from tests.support.cli import SCRIPT, thirteen

KEY = "5a" * 32
SHORT = "50000"  # cards: 962 deals, a fraction of a second each
WIDTH, HEIGHT = 1280, 3900


@dataclass
class Page(HTMLParser):
    """What a test reads of the page: tags counted, the verdict table's rows, figure captions,
    every ``<title>`` inside the SVGs, and any attribute that would fetch something."""

    tags: Counter[str] = field(default_factory=Counter)
    rows: list[list[str]] = field(default_factory=list)
    captions: list[str] = field(default_factory=list)
    titles: list[tuple[int, str]] = field(default_factory=list)  # (which svg, 1 up; text)
    fetches: list[str] = field(default_factory=list)
    _open: list[str] = field(default_factory=list)
    _text: list[str] = field(default_factory=list)
    _in_tests: bool = False

    def __post_init__(self) -> None:
        super().__init__()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] += 1
        found = dict(attrs)
        self.fetches += [f"{k}={v}" for k, v in attrs if k in {"src", "href", "xlink:href"}]
        if tag == "table" and found.get("class") == "tests":
            self._in_tests = True
        if tag == "tr" and self._in_tests:
            self.rows.append([])
        if tag in {"td", "figcaption", "title"}:
            self._open.append(tag)
            self._text = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._in_tests = False
        if self._open and tag == self._open[-1]:
            self._open.pop()
            text = "".join(self._text)
            if tag == "td" and self._in_tests:
                self.rows[-1].append(text)
            elif tag == "figcaption":
                self.captions.append(text)
            elif tag == "title" and self.tags["svg"]:
                self.titles.append((self.tags["svg"], text))

    def handle_data(self, data: str) -> None:
        self._text.append(data)


def parse(path: Path) -> Page:
    page = Page()
    page.feed(path.read_text(encoding="utf-8"))
    page.close()
    return page


def fields(report: str, name: str) -> list[str]:
    """Each test's ``name`` line of the text report (statistic, p-value, critical…)."""
    return [line[15:] for line in report.splitlines() if line.startswith(f"   {name:<12}")]


def test_r12_the_page_states_the_numbers_of_the_text_report_of_the_same_run(
    tmp_path: Path,
) -> None:
    html, text = tmp_path / "report.html", tmp_path / "report.txt"
    out = thirteen(
        "rng", "test", "--cards", SHORT, "--fixed-seed", KEY, "--repeats", "4", "--html", html,
        "--out", text,
    )  # fmt: skip
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stderr == ""  # no terminal, no --progress: nothing on stderr
    report = out.stdout
    assert text.read_text(encoding="utf-8") == report
    page = parse(html)
    # Self-contained: plots as inline SVG, no script, nothing fetched.
    assert page.tags["script"] == 0 and page.fetches == []
    assert page.tags["svg"] == 1 + 2 + 6  # the heat map, two runs tests, six p-value plots
    assert page.tags["rect"] > 52 * 52
    # The verdict table says what the text report says, figure for figure.
    verdicts = [line.rsplit(" ", 1)[1] for line in report.splitlines() if line.endswith("PASS")]
    assert [row[1:] for row in page.rows[1:]] == [
        [name, statistic, p, critical.removesuffix(", at 99%"), verdict]
        for name, statistic, p, critical, verdict in zip(
            re.findall(r"^\d\. (.+?) \.+ (?:PASS|FAIL)$", report, re.MULTILINE),
            fields(report, "statistic"),
            fields(report, "p-value"),
            fields(report, "critical"),
            verdicts,
            strict=True,
        )
    ]
    assert len(page.rows) == 1 + 6 and "RESULT: PASS, 6 of 6" in html.read_text("utf-8")
    # The p-value plots count what the text report's repeated samples count.
    names = re.findall(r"^\d\. (.+?) \.+ (?:PASS|FAIL)$", report, re.MULTILINE)
    tenths = re.findall(r"^\d\. .+? +(\d+ of 5 below 0\.01; by tenth: [\d ]+)$", report, re.M)
    assert len(tenths) == 6
    assert [c for c in page.captions if "by tenth" in c] == [
        f"{n}. {name}: {line}"
        for n, (name, line) in enumerate(zip(names, tenths, strict=True), start=1)
    ]
    for line in tenths:
        assert sum(int(k) for k in line.split(": ")[1].split()) == 5  # this sample and 4 more
    # The heat map holds the cell the text names as furthest from expected, with its count.
    worst = re.search(r"furthest from expected: (\w\w) at position (\d+), (\d+) times", report)
    assert worst is not None
    card, position, times = worst.groups()
    symbol = card[0] + {"c": "♣", "d": "♦", "h": "♥", "s": "♠"}[card[1]]
    cells = [text for svg, text in page.titles if svg == 1 and " at position " in text]
    assert len(cells) == 52 * 52
    assert any(t.startswith(f"{symbol} at position {position}: dealt {times} times") for t in cells)
    # The deals' runs histogram adds up to the runs and deals the text report counted.
    runs = re.search(r"^   details     ([\d,]+) runs, [\d,.]+ expected", report, re.M)
    assert runs is not None
    bars = [
        re.fullmatch(r"(\d+): (\d+) observed, [\d.]+ expected", t) for s, t in page.titles if s == 2
    ]
    dealt = [(int(m[1]), int(m[2])) for m in bars if m is not None]
    assert sum(value * count for value, count in dealt) == int(runs[1].replace(",", ""))
    assert sum(count for _, count in dealt) == 962


def _without_run_details(report: str) -> list[str]:
    """The report's lines but its date, software and time (which differ run to run)."""
    return [line for line in report.splitlines() if not line.startswith(("date", "time"))]


def test_html_repeats_twenty_samples_unless_told(tmp_path: Path) -> None:
    html = tmp_path / "r.html"
    out = thirteen("rng", "test", "--cards", SHORT, "--fixed-seed", KEY, "--html", html)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "p-values over 21 samples: this run's and 20 more of 962 deals" in out.stdout
    assert "p-values over 21 samples" in html.read_text(encoding="utf-8")
    plain = thirteen("rng", "test", "--cards", SHORT, "--fixed-seed", KEY)
    assert "REPEATED SAMPLES" not in plain.stdout
    # The text report is as it was, but for the repeated samples it now adds before RESULT.
    before, rest = out.stdout.split("REPEATED SAMPLES\n")
    after = rest[rest.index("RESULT: ") :]
    assert _without_run_details(before + after) == _without_run_details(plain.stdout)


def test_a_collected_file_makes_a_page_of_one_sample(tmp_path: Path) -> None:
    dealt, html = tmp_path / "deals.txt", tmp_path / "deals.html"
    collect = thirteen("rng", "collect", "--deals", "300", "--fixed-seed", KEY, "--out", dealt)
    assert collect.returncode == 0, collect.stderr
    out = thirteen("rng", "test", "--file", dealt, "--html", html)
    assert out.returncode == 0, out.stdout + out.stderr
    page = parse(html)
    assert page.tags["svg"] == 2 and len(page.rows) == 1 + 3  # heat map and dealt runs
    assert "give --repeats K" in html.read_text(encoding="utf-8")
    refused = thirteen("rng", "test", "--file", dealt, "--repeats", "2")
    assert refused.returncode == 2 and "not with --file" in refused.stderr
    assert len(refused.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("folder", "it is a directory"),
        ("plain/report.html", "is not a directory"),
        ("missing/report.html", "is not a directory"),
    ],
)
def test_a_page_that_cannot_be_written_is_refused_before_the_run(
    tmp_path: Path, where: str, message: str
) -> None:
    (tmp_path / "folder").mkdir()
    (tmp_path / "plain").write_text("a file, not a folder", encoding="utf-8")
    out = thirteen("rng", "test", "--cards", "20000000", "--html", tmp_path / where)
    assert out.returncode == 2 and out.stdout == ""  # 2×10^7 cards would take 90 s: not run
    assert message in out.stderr and len(out.stderr.splitlines()) == 1, out.stderr
    assert out.stderr.startswith("thirteen rng test: cannot write ")


def test_repeats_is_a_whole_number_of_samples() -> None:
    out = thirteen("rng", "test", "--repeats", "-1")
    assert out.returncode == 2 and "from 0 to 1,000" in out.stderr
    assert len(out.stderr.splitlines()) == 1


def test_progress_shows_on_stderr_with_the_flag_and_never_in_the_report(tmp_path: Path) -> None:
    out = thirteen(
        "rng", "test", "--cards", SHORT, "--fixed-seed", KEY, "--repeats", "2", "--progress"
    )
    assert out.returncode == 0, out.stderr
    lines = out.stderr.splitlines()
    assert lines and all(line.startswith("thirteen rng test [") for line in lines)
    assert "\r" not in out.stderr and lines[-1].endswith(tuple(f"{s}s" for s in "0123456789"))
    assert "100% done in" in lines[-1] and len(lines) <= 11  # a line per tenth, not a flood
    assert "ETA" not in out.stdout and "[#" not in out.stdout


def _read_all(fd: int, process: subprocess.Popen[str]) -> Iterator[bytes]:
    while True:
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # the other end closed
                return
            if not chunk:
                return
            yield chunk
        elif process.poll() is not None:
            return


def test_progress_redraws_in_place_on_a_terminal() -> None:
    assert SCRIPT is not None
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        [SCRIPT, "rng", "test", "--cards", "200000", "--fixed-seed", KEY, "--repeats", "3"],
        stdout=subprocess.PIPE,
        stderr=follower,
        text=True,
        env={**os.environ, "COLUMNS": "100"},
    )
    os.close(follower)
    shown = b"".join(_read_all(leader, process)).decode("utf-8")
    report, _ = process.communicate(timeout=120)
    os.close(leader)
    assert process.returncode in (0, 1), shown
    assert "\r" in shown and "% ETA " in shown and "100% done in" in shown
    assert "ETA" not in report and report.startswith("thirteen RNG report")


def test_the_page_renders_in_headless_chromium(tmp_path: Path) -> None:
    """A real browser draws the page: a PNG of the window's size, far from blank, and as
    tall as the page (the plots drawn, not a page cut short)."""
    html = tmp_path / "rng.html"
    out = thirteen("rng", "test", "--cards", "200000", "--fixed-seed", KEY, "--html", html)
    assert out.returncode in (0, 1), out.stderr
    data = screenshot(html, tmp_path / "rng.png", WIDTH, HEIGHT)
    assert len(data) > 200_000, f"the screenshot is only {len(data)} bytes: a blank page?"
    pixels = png_pixels(data)
    third = len(pixels) // 3
    for part in (pixels[:third], pixels[third : 2 * third], pixels[2 * third :]):
        assert len(set(part)) > 64  # text, heat map and bars in every third, not one fill
    keep = os.environ.get("THIRTEEN_RNG_SCREENSHOT")
    if keep:
        Path(keep).write_bytes(data)
