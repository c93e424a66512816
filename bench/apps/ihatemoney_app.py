"""I Hate Money for the app cases: a throwaway SQLite database and settings, a project seeded through its API.

The project, its participants and bills are created with the app's own REST API (/api/projects...), as its
mobile clients do, so the pages the report is about show them.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import tempfile
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

from appenv import parse_args, release, run_app


class Api:
    """The app's REST API at 127.0.0.1:port, authenticated as one project."""

    def __init__(self, port: int, project: str, code: str) -> None:
        """`project` and `code`: the project id and private code (HTTP basic auth)."""
        self.base = f"http://127.0.0.1:{port}/api"
        self.auth = "Basic " + base64.b64encode(f"{project}:{code}".encode()).decode()
        self.project = project

    def call(self, method: str, path: str, data: dict[str, Any] | None = None) -> Any:
        """One request, form-encoded like the API's clients; returns the decoded JSON answer."""
        body = urllib.parse.urlencode(data or {}, doseq=True).encode() if data is not None else None
        req = urllib.request.Request(self.base + path, data=body, method=method, headers={"Authorization": self.auth})
        with urllib.request.urlopen(req, timeout=20) as resp:
            text = resp.read().decode()
        return json.loads(text) if text.strip() else None

    def create_project(self, name: str, code: str, currency: str = "XXX") -> None:
        """Create the project (no authentication needed)."""
        data = {"name": name, "id": self.project, "password": code, "contact_email": "me@example.com"}
        self.call("POST", "/projects", {**data, "default_currency": currency})

    def member(self, name: str) -> int:
        """Add a participant; returns its id."""
        return int(self.call("POST", f"/projects/{self.project}/members", {"name": name}))

    def bill(self, what: str, payer: int, owers: list[int], amount: float, currency: str = "XXX") -> int:
        """Add a bill; returns its id."""
        data = {"date": "2025-01-10", "what": what, "payer": payer, "payed_for": owers, "amount": amount}
        return int(self.call("POST", f"/projects/{self.project}/bills", {**data, "original_currency": currency}))


def main(case_dir: Path, seed: Any = None) -> None:
    """`server.py PORT [--fixed]`: the case's release; `seed(port)` fills it once it answers."""
    port, is_fixed = parse_args(sys.argv[1:])
    bin_dir, _ = release(case_dir, is_fixed)
    with tempfile.TemporaryDirectory(prefix="ihatemoney-case-") as tmp:
        settings = Path(tmp) / "settings.cfg"
        # Plain http on 127.0.0.1: a Secure session cookie would never come back, so it is switched off.
        settings.write_text(
            f'SQLALCHEMY_DATABASE_URI = "sqlite:///{tmp}/ihatemoney.db"\nSECRET_KEY = "bench-only"\n'
            "SESSION_COOKIE_SECURE = False\nACTIVATE_DEMO_PROJECT = True\nENABLE_CAPTCHA = False\n"
            'MAIL_DEFAULT_SENDER = "Budget manager <admin@example.com>"\n'
        )
        env = {**os.environ, "IHATEMONEY_SETTINGS_FILE_PATH": str(settings), "FLASK_APP": "ihatemoney.wsgi"}
        cmd = [str(bin_dir / "python"), "-m", "flask", "run", "--host", "127.0.0.1", "--port", str(port)]
        sys.exit(run_app(cmd, port, (lambda: seed(port)) if seed else None, env=env, cwd=Path(tmp)))
