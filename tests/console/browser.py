"""Debian's chromium driven by Playwright (no browser download: the machines have no internet)."""

from __future__ import annotations

import os
from typing import Any

CHROMIUM = os.environ.get("ODRADEK_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]


def launch(playwright: Any) -> Any:
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
