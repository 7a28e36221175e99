"""What every real-browser test shares: Debian's Chromium, driven by Playwright,
and where screenshots go (test-output/screenshots/, gitignored) for a person
to look at."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings

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
