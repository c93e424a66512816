"""A shop with an Account page whose export fails for accounts without orders (--fixed: it does not)."""

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HOME = """<!doctype html><html><head><title>Shop</title></head><body>
<nav><a href="/">Home</a> <a href="/products">Products</a> <a href="/account">Account</a></nav>
<h1>Welcome</h1><p>New arrivals every week.</p></body></html>"""
PRODUCTS = """<!doctype html><html><body><nav><a href="/">Home</a> <a href="/account">Account</a></nav>
<h1>Products</h1><button onclick="this.textContent='Added'">Add to wishlist</button></body></html>"""
ACCOUNT = """<!doctype html><html><body><nav><a href="/">Home</a> <a href="/products">Products</a></nav>
<h1>Your account</h1><p>Orders: 0</p>
<button id="export" onclick="exportData()">Export my data</button><pre id="out"></pre>
<script>
async function exportData() {
  const r = await fetch("/api/export", {method: "POST"});
  document.getElementById("out").textContent = r.ok ? JSON.stringify(await r.json()) : "Export failed";
}
</script></body></html>"""
ORDERS: list[float] = []


class Handler(BaseHTTPRequestHandler):
    fixed = False

    def log_message(self, *args: object) -> None:
        pass

    def send(self, code: int, body: str, ctype: str = "text/html; charset=utf-8") -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        pages = {"/": HOME, "/products": PRODUCTS, "/account": ACCOUNT}
        self.send(200, pages[self.path]) if self.path in pages else self.send(404, "not found", "text/plain")

    def do_POST(self) -> None:
        if self.path != "/api/export":
            self.send(404, "not found", "text/plain")
            return
        try:
            average = sum(ORDERS) / len(ORDERS) if (ORDERS or not self.fixed) else 0.0
        except ZeroDivisionError:
            self.send(500, "Internal Server Error", "text/plain")
            return
        self.send(200, json.dumps({"orders": ORDERS, "average": average}), "application/json")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--fixed", action="store_true")
    a = ap.parse_args()
    Handler.fixed = a.fixed
    ThreadingHTTPServer(("127.0.0.1", a.port), Handler).serve_forever()
