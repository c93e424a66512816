"""A members list (aiohttp) whose row controls show only under the pointer; `--fixed` serves the fixed version.

Each member's row has a "Remove" button that the style sheet hides until the pointer is over the row
(`tr:hover .actions {visibility: visible}`), as many real apps do, and asks "Really remove?" before it acts:
a press that users leave out of their steps. A notice with a close button lies over the Export button, whose
export fails (500) in the buggy version. In the buggy version removing Carol, the one
member with open bills, answers 500; removing anyone else works in both versions. A run that presses the first
row's look-alike button, or that never finds the hidden one, does not see the bug.
"""

import argparse

from aiohttp import web

FIXED = web.AppKey("fixed", bool)
MEMBERS = ("Alice", "Bob", "Carol", "Dan")

STYLE = """<style>
.actions { visibility: hidden; }
table.members tr:hover .actions { visibility: visible; }
</style>"""


async def home(request: web.Request) -> web.Response:
    rows = "".join(
        f'<tr><td>{name}</td><td>0.00</td><td class="actions"><button data-name="{name}">Remove</button></td></tr>'
        for name in MEMBERS
    )
    html = f"""<!doctype html><html><head><title>Members · Flatshare</title>{STYLE}</head><body>
<div class="notice" style="position: fixed; top: 0; left: 0; right: 0; height: 70px; background: #dfd; z-index: 5">
Welcome back: the list was updated.
<button class="close" aria-label="Close" onclick="this.parentElement.remove()">×</button>
</div>
<button id="export" style="position: fixed; top: 20px; left: 300px">Export</button>
<h1 style="margin-top: 90px">Members</h1>
<table class="members"><thead><tr><th>Who</th><th>Balance</th><th></th></tr></thead><tbody>{rows}</tbody></table>
<p id="status"></p>
<script>
for (const b of document.querySelectorAll('.actions button')) {{
  b.onclick = async () => {{
    if (!b.dataset.armed) {{ b.dataset.armed = '1'; b.textContent = 'Really remove?'; return; }}
    const r = await fetch('/api/remove?name=' + encodeURIComponent(b.dataset.name), {{method: 'POST'}});
    if (r.ok) {{ b.closest('tr').remove(); document.getElementById('status').textContent = 'Removed'; }}
  }};
}}
document.getElementById('export').onclick = () => fetch('/api/export', {{method: 'POST'}});
</script></body></html>"""
    return web.Response(text=html, content_type="text/html")


async def export(request: web.Request) -> web.Response:
    if not request.app[FIXED]:
        raise web.HTTPInternalServerError(text="export: no such column 'balance'")
    return web.json_response({"ok": True})


async def remove(request: web.Request) -> web.Response:
    if request.query.get("name") == "Carol" and not request.app[FIXED]:
        raise web.HTTPInternalServerError(text="cannot remove a member with open bills")
    return web.json_response({"ok": True})


def make_app(fixed: bool) -> web.Application:
    app = web.Application()
    app[FIXED] = fixed
    app.router.add_get("/", home)
    app.router.add_post("/api/remove", remove)
    app.router.add_post("/api/export", export)
    return app


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--fixed", action="store_true")
    args = ap.parse_args()
    web.run_app(make_app(args.fixed), host="127.0.0.1", port=args.port, print=None)
