"""The GitHub App's manifest (least privilege), shipped inside the package so a wheel and the image carry it."""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

#: The manifest's file, in this package's data folder (pyproject's package-data lists it).
MANIFEST_NAME = "app-manifest.json"


def manifest() -> dict[str, Any]:
    """The App manifest, as GitHub's "register an App from a manifest" flow takes it (a fresh copy each call)."""
    text = resources.files(__package__ or "bot.forges").joinpath("data", MANIFEST_NAME).read_text(encoding="utf-8")
    return dict(json.loads(text))
