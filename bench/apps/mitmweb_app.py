"""mitmweb for the app cases: its web UI on the case's port, the proxy on a free port, optional seeded flows.

Flows are written with mitmproxy's own test helpers and flow writer (run in the release's venv), then loaded
with --rfile, so the flow list is what a user who captured that traffic would see.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
from pathlib import Path

from appenv import parse_args, release, run_app

#: Writes N flows to a file: GET requests to distinct paths of one host, answered 200.
_WRITE_FLOWS = """
import sys
from mitmproxy import io
from mitmproxy.test import tflow
n, path = int(sys.argv[1]), sys.argv[2]
with open(path, "wb") as f:
    w = io.FlowWriter(f)
    for i in range(n):
        fl = tflow.tflow(resp=True)
        fl.request.host = "shop.example.com"
        fl.request.path = f"/api/items/{i}" if i % 50 else f"/checkout/{i}"
        w.add(fl)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def main(case_dir: Path, flows: int = 0) -> None:
    """`server.py PORT [--fixed]`: the case's mitmweb release, with `flows` captured flows loaded."""
    port, is_fixed = parse_args(sys.argv[1:])
    bin_dir, _ = release(case_dir, is_fixed)
    with tempfile.TemporaryDirectory(prefix="mitmweb-case-") as tmp:
        cmd = [
            str(bin_dir / "mitmweb"),
            "--web-host", "127.0.0.1", "--web-port", str(port), "--no-web-open-browser",
            "--listen-host", "127.0.0.1", "--listen-port", str(_free_port()),
            "--set", f"confdir={tmp}",
        ]  # fmt: skip
        if flows:
            dump = Path(tmp) / "flows.mitm"
            subprocess.run([str(bin_dir / "python"), "-c", _WRITE_FLOWS, str(flows), str(dump)], check=True)
            cmd += ["--rfile", str(dump)]
        sys.exit(run_app(cmd, port))
