"""Headless Chromium driven through chromedriver's W3C WebDriver HTTP API, with urllib only.

Debian's ``chromium`` and ``chromium-driver`` packages (``make browser-check`` installs them);
nothing is downloaded at run time. Only what the console tests need: open a page, find
elements, type, click, read text, a computed style and screenshots.
"""

from __future__ import annotations

import base64
import json
import shutil
import socket
import subprocess
import tempfile
import threading
import urllib.error
import urllib.request
from typing import Any

from tests.support.chromium import HEADLESS

ELEMENT = "element-6066-11e4-a52e-4f735466cecf"  # the W3C key of an element reference
FLAGS = [*HEADLESS, "--disable-dev-shm-usage"]


class WebDriverError(AssertionError):
    """The driver refused a command; the message is its error and message."""


def browsers() -> tuple[str, str] | None:
    """The paths of chromium and chromedriver, or None when either is missing."""
    browser, driver = shutil.which("chromium"), shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


class Chromium:
    """chromedriver on a free port, one browser session with a fresh profile."""

    def __init__(self, browser: str, driver: str, width: int = 1280, height: int = 1000) -> None:
        self.profile = tempfile.TemporaryDirectory(prefix="thirteen-chromium-")
        self.output: list[str] = []
        try:
            self._start_driver(driver)
            options = {
                "binary": browser,
                "args": [
                    *FLAGS,
                    f"--user-data-dir={self.profile.name}",
                    f"--window-size={width},{height}",
                ],
            }
            created = self._send(
                "POST",
                "/session",
                {"capabilities": {"alwaysMatch": {"goog:chromeOptions": options}}},
            )
        except BaseException:
            self._stop_driver()
            raise
        self.session = f"/session/{created['sessionId']}"

    def _start_driver(self, driver: str) -> None:
        """chromedriver on a port picked here: with ``--port=0`` it sometimes failed to bind
        ("IPv4 port not available"). A port taken meanwhile by someone else is tried again."""
        for _ in range(5):
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                self.port = probe.getsockname()[1]
            self.ready = threading.Event()
            self.process = subprocess.Popen(
                [driver, f"--port={self.port}", "--allowed-ips=127.0.0.1"],
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            threading.Thread(target=self._read, daemon=True).start()
            if self.ready.wait(30) and self.process.poll() is None:
                return
            self._stop_driver()
        raise AssertionError("chromedriver did not start:\n" + "".join(self.output[-20:]))

    def _stop_driver(self) -> None:
        process = getattr(self, "process", None)
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()

    def _read(self) -> None:
        process, ready = self.process, self.ready
        assert process.stdout is not None
        for line in process.stdout:
            self.output.append(line)
            if "started successfully" in line:
                ready.set()
        ready.set()  # exited: the caller sees it has

    def _send(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body if body is not None else {}).encode() if method == "POST" else None
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return json.load(answer)["value"]
        except urllib.error.HTTPError as error:
            value = json.load(error).get("value", {})
            raise WebDriverError(f"{value.get('error')}: {value.get('message')}") from None

    def command(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        return self._send(method, self.session + path, body)

    def open(self, url: str) -> None:
        self.command("POST", "/url", {"url": url})

    @property
    def url(self) -> str:
        return str(self.command("GET", "/url"))

    def find(self, css: str) -> str:
        """The first element ``css`` selects (its reference); fails when there is none."""
        return str(
            self.command("POST", "/element", {"using": "css selector", "value": css})[ELEMENT]
        )

    def find_all(self, css: str) -> list[str]:
        found = self.command("POST", "/elements", {"using": "css selector", "value": css})
        return [str(e[ELEMENT]) for e in found]

    def type(self, element: str, text: str) -> None:
        self.command("POST", f"/element/{element}/value", {"text": text})

    def click(self, element: str) -> None:
        self.command("POST", f"/element/{element}/click", {})

    def text(self, element: str) -> str:
        return str(self.command("GET", f"/element/{element}/text"))

    def style(self, element: str, name: str) -> str:
        return str(self.command("GET", f"/element/{element}/css/{name}"))

    def screenshot(self, element: str | None = None) -> bytes:
        """A PNG of the window, or of one element (scrolled into view)."""
        where = f"/element/{element}/screenshot" if element else "/screenshot"
        return base64.b64decode(self.command("GET", where))

    def close(self) -> None:
        try:
            self.command("DELETE", "")
        finally:
            self._stop_driver()
            self.profile.cleanup()
