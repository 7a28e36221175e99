"""What every real-browser test shares: Debian's Chromium, driven by Playwright,
and where screenshots go (test-output/screenshots/, gitignored) for a person
to look at."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import OperationalError

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling out, and this
# machine's closed network refuses it; --no-sandbox because CI runs as root.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(settings.BASE_DIR) / "test-output" / "screenshots"


def shoot(page: Any, name: str, *, full_page: bool = True) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)


# axe-core, vendored from npm (tests/vendor/axe-core/README.md): never fetched at run time.
AXE_VERSION = "4.14.1"
AXE_SOURCE = Path(settings.BASE_DIR) / "tests" / "vendor" / "axe-core" / "axe.min.js"
# The impacts a page may not have at all; "moderate" and "minor" are reported, not failed.
AXE_FAILING_IMPACTS = ("serious", "critical")
# The two sizes every visual check runs at: a laptop and a phone.
DESKTOP = {"width": 1366, "height": 900}
PHONE = {"width": 390, "height": 844}


def axe_violations(page: Any) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now.

    The script is evaluated through the DevTools protocol, which the site's CSP
    (no inline script) does not govern, so the page under test stays unchanged."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.evaluate(AXE_SOURCE.read_text())
    results = page.evaluate("async () => await window.axe.run(document, {resultTypes: ['violations']})")
    return [
        {
            "id": v["id"],
            "impact": v["impact"],
            "help": v["help"],
            "nodes": [n["target"] for n in v["nodes"]][:5],
        }
        for v in results["violations"]
        if v["impact"] in AXE_FAILING_IMPACTS
    ]


def sideways_overflow(page: Any) -> dict[str, Any] | None:
    """None when the page does not scroll sideways; else its width and the widest offenders."""
    width = page.evaluate("document.documentElement.scrollWidth")
    inner = page.evaluate("window.innerWidth")
    if width <= inner:
        return None
    offenders = page.evaluate(
        """(inner) => Array.from(document.querySelectorAll('body *'))
            .filter(e => e.getBoundingClientRect().right > inner + 1 && !e.closest('.table-scroll'))
            .slice(0, 8).map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))""",
        inner,
    )
    return {"scrollWidth": width, "innerWidth": inner, "offenders": offenders}


def write_while_served(write: Callable[[], Any], *, seconds: float = 10.0) -> Any:
    """Run a database write while the live server may be answering the page's polls: on SQLite
    the tests' shared in-memory database locks a table per connection (SQLITE_LOCKED, which the
    busy timeout does not wait out), so a write racing a poll's read is retried briefly.
    PostgreSQL never refuses it."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            return write()
        except OperationalError as error:
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)
