"""A catalog search page that fetches /api/search; the buggy version matches case-sensitively (--fixed: not)."""

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

PAGE = """<!doctype html><html><head><title>Catalog</title></head><body><h1>Catalog</h1>
<input id="q" placeholder="Search products" aria-label="Search"> <button id="go">Search</button>
<ul id="results"></ul>
<script>
document.getElementById("go").onclick = async () => {
  const r = await fetch("/api/search?q=" + encodeURIComponent(document.getElementById("q").value));
  const items = await r.json();
  const ul = document.getElementById("results");
  ul.innerHTML = "";
  for (const it of items.length ? items : ["No results"]) {
    const li = document.createElement("li"); li.textContent = it; ul.appendChild(li);
  }
};
</script></body></html>"""
PRODUCTS = ["Blue lamp", "Red chair", "Oak table"]


class Handler(BaseHTTPRequestHandler):
    fixed = False

    def log_message(self, *args: object) -> None:
        pass

    def send(self, code: int, body: str, ctype: str) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlparse(self.path)
        if url.path == "/":
            self.send(200, PAGE, "text/html; charset=utf-8")
        elif url.path == "/api/search":
            q = parse_qs(url.query).get("q", [""])[0]
            # The bug: a case-sensitive match; the fix folds case on both sides.
            hits = [p for p in PRODUCTS if (q.lower() in p.lower() if self.fixed else q in p)]
            self.send(200, json.dumps(hits), "application/json")
        else:
            self.send(404, "not found", "text/plain")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--fixed", action="store_true")
    a = ap.parse_args()
    Handler.fixed = a.fixed
    ThreadingHTTPServer(("127.0.0.1", a.port), Handler).serve_forever()
