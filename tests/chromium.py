"""Headless Chromium for the tests, driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
commands on fd 3, answers and events on fd 4, each a JSON text ended by NUL) — what Playwright does, without
a websocket client, npm or chromedriver. What a page logs as an error reaches us three ways, all collected:
console.error/assert calls, uncaught exceptions, and the browser's own log (a resource that failed to load, a
content-security-policy violation)."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)
TIMEOUT_S = 120.0  # one command or one page load, on a loaded machine


class Chromium:
    def __init__(self, width: int = 1280, height: int = 900):
        self.profile = tempfile.mkdtemp(prefix="fairmark-chromium-")
        to_child, self._write = os.pipe()
        self._read, from_child = os.pipe()

        def fds() -> None:  # the pipe's ends become the child's fds 3 and 4 (dup first: one may be 3 already)
            a, b = os.dup(to_child), os.dup(from_child)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "about:blank"],
            close_fds=False,
            preexec_fn=fds,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_child)
        os.close(from_child)
        self._buf, self._id, self.events = b"", 0, []
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable")
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        )

    # -- the protocol ---------------------------------------------------------------------------------------
    def _next(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise RuntimeError(f"chromium ended (exit {self.proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def _call(self, method: str, params: dict | None = None, session: str | None = None) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._write, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            m = self._next(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def call(self, method: str, params: dict | None = None) -> dict[str, Any]:
        return self._call(method, params, self.session)

    # -- pages ----------------------------------------------------------------------------------------------
    def load(self, url: str) -> list[str]:
        """Open `url`, wait for its load event; the errors the page produced, as text."""
        self.events = []
        nav = self.call("Page.navigate", {"url": url})
        if nav.get("errorText"):
            return [f"navigation failed: {nav['errorText']}"]
        deadline = time.monotonic() + TIMEOUT_S
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._next(deadline))
        return self.errors()

    def errors(self) -> list[str]:
        out = []
        for e in self.events:
            method, p = e.get("method"), e.get("params", {})
            if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append(
                    "console: " + " ".join(str(a.get("value", a.get("description"))) for a in p["args"])
                )
            elif method == "Runtime.exceptionThrown":
                out.append("exception: " + p["exceptionDetails"].get("text", ""))
            elif method == "Log.entryAdded" and p["entry"]["level"] == "error":
                out.append(f"{p['entry']['source']}: {p['entry']['text']} {p['entry'].get('url', '')}")
        return out

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True})
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression[:80]}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def press(self, key: str = "Tab", code: int = 9) -> None:
        for kind in ("keyDown", "keyUp"):
            self.call(
                "Input.dispatchKeyEvent",
                {"type": kind, "key": key, "code": key, "windowsVirtualKeyCode": code},
            )

    def screenshot(self, path: Path) -> None:
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True})
        path.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._call("Browser.close")
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
