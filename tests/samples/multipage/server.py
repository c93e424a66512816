"""A small multi-page shop (aiohttp) with one bug per page; `--fixed` serves the fixed version.

Pages: a home page with a footer link to another host that looks like "home", a product list whose wishlist
button fails on the 3rd press (HTTP 500 from its fetch), an orders table whose Price column has a filter menu
whose "Sort descending" throws (the Status column has a look-alike menu that works), an order page with an icon
button named only by its image's alt text, a settings page whose currency dropdown fails on GBP (HTTP 500), an
about page with a link to another host before a button that logs a console error, and a gallery that opens a
WebSocket to another host, whose thumbnail always answers 500 (not the bug) and whose comments' fetch fails only
in the buggy version. An account area has a sign-in form whose button says "Next"; once signed in, its page has
an upload button that is only an icon with a title (its handler throws in the buggy version), and an address
under /files that does not exist answers 500 instead of 404 in the buggy version while signed in.
"""

import argparse

from aiohttp import web

FIXED = web.AppKey("fixed", bool)

NAV = (
    '<nav><a href="/">Home</a> <a href="/products">Products</a> <a href="/orders">Orders</a> '
    '<a href="/settings">Settings</a> <a href="/gallery">Gallery</a> <a href="/about">About</a></nav>'
)
FOOTER = (
    '<footer><a href="http://acme-home.example.test/">Acme home on GitHub</a> · '
    '<a href="https://blog.example.test/">Company blog</a></footer>'
)


def page(title: str, body: str) -> web.Response:
    head = f"<!doctype html><html><head><title>{title} · Acme Shop</title></head>"
    html = f"{head}<body>{NAV}{body}{FOOTER}</body></html>"
    return web.Response(text=html, content_type="text/html")


async def home(request: web.Request) -> web.Response:
    return page("Home", "<h1>Welcome to Acme Shop</h1><p>Lamps, mugs and more.</p>")


async def products(request: web.Request) -> web.Response:
    return page(
        "Products",
        """<h1>Products</h1><ul><li>Desk lamp <button id="wish">Add to wishlist</button> <span id="count">0</span></li>
        </ul><script>
        let n = 0;
        document.getElementById('wish').onclick = async () => {
          n += 1;
          const r = await fetch('/api/wishlist?n=' + n, {method: 'POST'});
          if (r.ok) document.getElementById('count').textContent = String(n);
        };
        </script>""",
    )


MENU = """<button class="filter" aria-haspopup="menu" aria-expanded="false">Filter</button>
<ul role="menu" aria-label="{col} filter" hidden>
<li><button role="menuitem" data-col="{col}" data-dir="1">Sort ascending</button></li>
<li><button role="menuitem" data-col="{col}" data-dir="-1">Sort descending</button></li></ul>"""


async def orders(request: web.Request) -> web.Response:
    fixed = "true" if request.app[FIXED] else "false"
    return page(
        "Orders",
        f"""<h1>Orders</h1><table id="orders"><thead><tr><th>Order</th>
        <th>Status {MENU.format(col="status")}</th><th>Price {MENU.format(col="price")}</th></tr></thead><tbody>
        <tr><td><a href="/orders/1">Order #1</a></td><td>shipped</td><td data-v="30">$30.00</td></tr>
        <tr><td><a href="/orders/2">Order #2</a></td><td>open</td><td data-v="120">$120.00</td></tr>
        </tbody></table><script>
        const FIXED = {fixed};
        for (const b of document.querySelectorAll('.filter')) b.onclick = () => {{
          const menu = b.nextElementSibling; menu.hidden = !menu.hidden;
          b.setAttribute('aria-expanded', String(!menu.hidden));
        }};
        for (const item of document.querySelectorAll('[role=menuitem]')) item.onclick = () => {{
          const body = document.querySelector('#orders tbody');
          const rows = [...body.rows]; const dir = Number(item.dataset.dir);
          const col = item.dataset.col === 'price' ? 2 : 1;
          const key = (r) => col === 2 ? Number(r.cells[2].dataset.v) : r.cells[1].textContent;
          if (item.dataset.col === 'price' && dir < 0 && !FIXED) {{
            rows.sort((a, b) => b.cells[2].dataset.value.localeCompare(a.cells[2].dataset.value));
          }}
          rows.sort((a, b) => (key(a) > key(b) ? 1 : -1) * dir);
          rows.forEach((r) => body.appendChild(r));
          item.closest('[role=menu]').hidden = true;
        }};
        </script>""",
    )


async def order(request: web.Request) -> web.Response:
    number = request.match_info["number"]
    # The bug: the receipt module is never loaded, so the button's handler throws a ReferenceError.
    fixed = "document.getElementById('note').textContent = 'Receipt ready'"
    handler = fixed if request.app[FIXED] else "receipt.render()"
    return page(
        f"Order #{number}",
        f"""<h1>Order #{number}</h1><p>Status: shipped</p><a href="/orders">Back to orders</a>
        <button id="b7" onclick="{handler}"><img alt="Print receipt" width="16" height="16"
        src="data:image/gif;base64,R0lGODlhAQABAAAAACw="></button><p id="note"></p>
        <form><label>Refund reason <input name="reason"></label><button type="button">Request refund</button></form>""",
    )


async def settings(request: web.Request) -> web.Response:
    return page(
        "Settings",
        """<h1>Settings</h1><label for="currency">Currency</label>
        <select id="currency"><option>USD</option><option>EUR</option><option>GBP</option></select>
        <p id="saved"></p><script>
        document.getElementById('currency').onchange = async (e) => {
          const r = await fetch('/api/currency?c=' + e.target.value, {method: 'POST'});
          document.getElementById('saved').textContent = r.ok ? 'Currency saved' : '';
        };
        </script>""",
    )


async def about(request: web.Request) -> web.Response:
    fixed = "true" if request.app[FIXED] else "false"
    return page(
        "About",
        f"""<h1>About us</h1><p><a id="partner" href="http://partner.example.test/welcome">Our partner</a></p>
        <button id="hello">Say hello</button><p id="greeting"></p><script>
        document.getElementById('hello').onclick = () => {{
          if (!{fixed}) console.error('greeting service unavailable');
          document.getElementById('greeting').textContent = 'Hello!';
        }};
        </script>""",
    )


async def gallery(request: web.Request) -> web.Response:
    # The thumbnail's 500 is the image server's trouble in both versions; only the comments' fetch is the bug.
    return page(
        "Gallery",
        """<h1>Gallery</h1><img src="/thumbs/1.png" alt="thumbnail" width="20" height="20">
        <button id="more">Load comments</button><ul id="comments"></ul><script>
        try { new WebSocket('ws://chat.example.test/live'); } catch (e) { /* the live chat is optional */ }
        document.getElementById('more').onclick = async () => {
          const r = await fetch('/api/comments');
          if (r.ok) document.getElementById('comments').innerHTML = '<li>Nice lamp!</li>';
        };
        </script>""",
    )


SIGN_IN = """<h1>Sign in</h1><form method="post" action="/account">
<label>Username <input name="user"></label><label>PIN <input name="pin" type="password"></label>
<button type="submit">Next</button></form>"""


async def account(request: web.Request) -> web.Response:
    if request.method == "POST":
        form = await request.post()
        if form.get("user") == "dana" and form.get("pin") == "4321":
            response = web.HTTPFound("/account/home")
            response.set_cookie("member", "dana")
            raise response
        return page("Sign in", "<p>Wrong username or PIN</p>" + SIGN_IN)
    return page("Sign in", SIGN_IN)


async def account_home(request: web.Request) -> web.Response:
    if request.cookies.get("member") != "dana":
        raise web.HTTPFound("/account")
    handler = "document.getElementById('up').textContent = 'Choose a file'" if request.app[FIXED] else "picker.open()"
    return page(
        "Your account",
        f"""<h1>Hello dana</h1><button title="Upload a photo" onclick="{handler}"><img alt="" width="16"
        height="16" src="data:image/gif;base64,R0lGODlhAQABAAAAACw="></button><p id="up"></p>""",
    )


async def files(request: web.Request) -> web.Response:
    if request.cookies.get("member") == "dana" and not request.app[FIXED]:
        raise web.HTTPInternalServerError(text="no member menu on error pages")
    raise web.HTTPNotFound(text="no such file")


async def thumbnail(request: web.Request) -> web.Response:
    raise web.HTTPInternalServerError(text="thumbnail service down")


async def comments(request: web.Request) -> web.Response:
    if not request.app[FIXED]:
        raise web.HTTPInternalServerError(text="comments: database locked")
    return web.json_response([{"text": "Nice lamp!"}])


async def wishlist(request: web.Request) -> web.Response:
    n = int(request.query.get("n", "0"))
    if n >= 3 and not request.app[FIXED]:
        raise web.HTTPInternalServerError(text="wishlist full: index out of range")
    return web.json_response({"count": n})


async def currency(request: web.Request) -> web.Response:
    if request.query.get("c") == "GBP" and not request.app[FIXED]:
        raise web.HTTPInternalServerError(text="no exchange rate for GBP")
    return web.json_response({"ok": True})


def make_app(fixed: bool) -> web.Application:
    app = web.Application()
    app[FIXED] = fixed
    app.router.add_get("/", home)
    app.router.add_get("/products", products)
    app.router.add_get("/orders", orders)
    app.router.add_get("/orders/{number}", order)
    app.router.add_get("/settings", settings)
    app.router.add_get("/about", about)
    app.router.add_get("/gallery", gallery)
    app.router.add_get("/thumbs/{name}", thumbnail)
    app.router.add_route("*", "/account", account)
    app.router.add_get("/account/home", account_home)
    app.router.add_get("/files/{name:.*}", files)
    app.router.add_get("/api/comments", comments)
    app.router.add_post("/api/wishlist", wishlist)
    app.router.add_post("/api/currency", currency)
    return app


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--fixed", action="store_true")
    a = ap.parse_args()
    web.run_app(make_app(a.fixed), host="127.0.0.1", port=a.port, print=None)
