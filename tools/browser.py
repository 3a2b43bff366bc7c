"""Drive a headless Chromium over the DevTools protocol: open a page, evaluate JavaScript, click, screenshot.

    python tools/browser.py reports/matrix.html docs/report.png   # a screenshot of the report
    python tools/browser.py reports/matrix.html docs/grid.png --width 1400 --at "#g"   # the grid in a 1,400 px window

Uses the system's Chromium (Debian's `chromium`) and websocket-client; nothing is downloaded.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any, Dict, Optional

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium() -> Optional[str]:
    """The Chromium binary: $CHROMIUM, or the first of the usual names on PATH."""
    given = os.environ.get("CHROMIUM")
    if given:
        return given if Path(given).exists() else shutil.which(given)
    return next((p for p in map(shutil.which, NAMES) if p), None)


class Browser:
    """One headless Chromium with one page, spoken to over a DevTools websocket."""

    def __init__(self, binary: str, width: int = 1280, height: int = 900, timeout: float = 30.0) -> None:
        import websocket  # websocket-client

        self.profile = tempfile.mkdtemp(prefix="qdq-chromium-")
        port = _free_port()
        self.process = subprocess.Popen(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
             "--hide-scrollbars", f"--remote-debugging-port={port}", f"--user-data-dir={self.profile}",
             f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.timeout = timeout
        target = self._page_target(port)
        self.ws = websocket.create_connection(target, timeout=timeout, suppress_origin=True)
        self.next_id = 0
        self.call("Page.enable")
        self.call("Runtime.enable")
        self.call("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)

    def _page_target(self, port: int) -> str:
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.process.returncode} before it listened")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=2) as answer:
                    pages = [t for t in json.load(answer) if t.get("type") == "page"]
                if pages:
                    return pages[0]["webSocketDebuggerUrl"]
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"chromium did not open its DevTools port within {self.timeout:.0f} s")

    def call(self, method: str, **params: Any) -> Dict[str, Any]:
        """Send one DevTools command and return its result (events in between are skipped)."""
        self.next_id += 1
        ident = self.next_id
        self.ws.send(json.dumps({"id": ident, "method": method, "params": params}))
        while True:
            message = json.loads(self.ws.recv())
            if message.get("id") == ident:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return message.get("result", {})

    def open(self, path: Path) -> None:
        """Load a local file and wait until it has loaded."""
        self.call("Page.navigate", url=Path(path).resolve().as_uri())
        deadline = time.monotonic() + self.timeout
        while self.evaluate("document.readyState") != "complete":
            if time.monotonic() > deadline:
                raise RuntimeError(f"{path} did not finish loading")
            time.sleep(0.05)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def click(self, selector: str) -> None:
        """A real mouse click (pressed and released) at the middle of the element."""
        box = self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                            " e.scrollIntoView({block: 'center'}); const r = e.getBoundingClientRect();"
                            " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.call("Input.dispatchMouseEvent", type=kind, x=box[0], y=box[1], button="left", clickCount=1)

    def screenshot(self, full_page: bool = False) -> bytes:
        """The page as PNG bytes (the viewport, or the whole page up to 4000 px high)."""
        params: Dict[str, Any] = {"format": "png"}
        if full_page:
            width, height = self.evaluate("[document.documentElement.scrollWidth,"
                                          " document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": width, "height": min(height, 4000), "scale": 1}
            params["captureBeyondViewport"] = True
        return base64.b64decode(self.call("Page.captureScreenshot", **params)["data"])

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self) -> "Browser":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(argv: Optional[list] = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from core.cli import ArgumentParser

    parser = ArgumentParser(prog="python tools/browser.py", description="a screenshot of a page")
    parser.add_argument("page")
    parser.add_argument("png")
    parser.add_argument("--width", type=int, default=1280, help="the window's width in px (default 1280)")
    parser.add_argument("--height", type=int, default=1000, help="the window's height in px (default 1000)")
    parser.add_argument("--at", metavar="SELECTOR", help="scroll this element to the window's top first")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    binary = find_chromium()
    if not binary:
        print("tools/browser.py: no chromium found (apt-get install chromium)", file=sys.stderr)
        return 2
    with Browser(binary, width=args.width, height=args.height) as browser:
        browser.open(Path(args.page))
        if args.at:
            browser.evaluate(f"document.querySelector({json.dumps(args.at)}).scrollIntoView({{block: 'start'}})")
        Path(args.png).write_bytes(browser.screenshot())
    print(f"wrote {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
