"""A sign-in form; the buggy version fails on a quote in the user name (run with --fixed for the fix)."""

import argparse
import html
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

FORM = """<!doctype html><html><head><title>Sign in</title></head><body><h1>Sign in</h1>
<form method="post" action="/login"><label for="user">Username</label> <input id="user" name="user">
<label for="pw">Password</label> <input id="pw" name="pw" type="password">
<button type="submit">Sign in</button></form></body></html>"""
USERS = {"o'brien": "hunter2", "ada": "lovelace"}


def lookup(name: str, fixed: bool) -> str | None:
    if not fixed and "'" in name:
        # The bug: the name is pasted into a quoted query string and the parser chokes on the quote.
        raise ValueError(f"unterminated string in query: name = '{name}'")
    return USERS.get(name)


class Handler(BaseHTTPRequestHandler):
    fixed = False

    def log_message(self, *args: object) -> None:
        pass

    def send(self, code: int, body: str) -> None:
        data = body.encode()
        self.send_response(code)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        self.send(200, FORM) if self.path in ("/", "/login") else self.send(404, "not found")

    def do_POST(self) -> None:
        form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
        name, pw = form.get("user", [""])[0], form.get("pw", [""])[0]
        try:
            ok = lookup(name, self.fixed) == pw
        except ValueError:
            self.send(500, "<h1>Internal Server Error</h1>")
            return
        msg = f"Welcome back, {html.escape(name)}" if ok else "Wrong user name or password"
        self.send(200, f"<!doctype html><html><body><h1>{msg}</h1><a href='/'>Sign in again</a></body></html>")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--fixed", action="store_true")
    a = ap.parse_args()
    Handler.fixed = a.fixed
    ThreadingHTTPServer(("127.0.0.1", a.port), Handler).serve_forever()
