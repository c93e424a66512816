"""Radicale for the app cases: a throwaway config and storage, plain htpasswd users, seeded collections.

Radicale's own web UI (/.web/) is what the reports are about; the collections a report needs exist before the
user arrives, created through Radicale's own CalDAV/CardDAV API (MKCOL), as a client would.
"""

from __future__ import annotations

import base64
import sys
import tempfile
import urllib.request
from pathlib import Path

from appenv import parse_args, release, run_app

#: A calendar and an address book, as MKCOL bodies (RFC 5689 extended MKCOL).
_MKCOL = {
    "calendar": "<C:calendar xmlns:C='urn:ietf:params:xml:ns:caldav'/>",
    "addressbook": "<CR:addressbook xmlns:CR='urn:ietf:params:xml:ns:carddav'/>",
}


def _mkcol(port: int, user: str, password: str, name: str, kind: str) -> None:
    body = (
        "<?xml version='1.0'?><mkcol xmlns='DAV:'><set><prop><resourcetype><collection/>"
        f"{_MKCOL[kind]}</resourcetype><displayname>{name}</displayname></prop></set></mkcol>"
    )
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/{user}/{name}/",
        data=body.encode(),
        method="MKCOL",
        headers={"Authorization": f"Basic {token}", "Content-Type": "application/xml"},
    )
    with urllib.request.urlopen(req, timeout=10):
        pass


def main(case_dir: Path, users: dict[str, str], collections: list[tuple[str, str, str]]) -> None:
    """`server.py PORT [--fixed]`: the case's Radicale release; `collections` are (user, name, kind)."""
    port, is_fixed = parse_args(sys.argv[1:])
    bin_dir, _ = release(case_dir, is_fixed)
    with tempfile.TemporaryDirectory(prefix="radicale-case-") as tmp:
        root = Path(tmp)
        (root / "users").write_text("".join(f"{u}:{p}\n" for u, p in users.items()))
        (root / "config").write_text(
            f"[server]\nhosts = 127.0.0.1:{port}\n"
            f"[auth]\ntype = htpasswd\nhtpasswd_filename = {root / 'users'}\nhtpasswd_encryption = plain\n"
            f"[storage]\nfilesystem_folder = {root / 'collections'}\n"
            "[web]\ntype = internal\n[logging]\nlevel = warning\n"
        )

        def seed() -> None:
            for user, name, kind in collections:
                _mkcol(port, user, users[user], name, kind)

        cmd = [str(bin_dir / "python"), "-m", "radicale", "--config", str(root / "config")]
        sys.exit(run_app(cmd, port, seed))
