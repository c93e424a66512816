"""The web driver: Playwright on Debian's chromium (no browser download)."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import re
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

from agents.app.driver import DriverError, Element, Signal
from agents.app.navigate import origin_of
from agents.app.textmatch import core_words

log = logging.getLogger(__name__)

CHROMIUM = "/usr/bin/chromium"

#: Functions shared by the observer and the accessible-name locator: a CSS path that finds an element again (id
#: when unique), its label, role, and the part of the page it sits in.
_HELPERS_JS = r"""
  const path = (el) => {
    if (el.id && document.querySelectorAll('#' + CSS.escape(el.id)).length === 1) return '#' + CSS.escape(el.id);
    const parts = [];
    for (let n = el; n && n.nodeType === 1 && n !== document.documentElement; n = n.parentElement) {
      if (n.id && document.querySelectorAll('#' + CSS.escape(n.id)).length === 1) {
        parts.unshift('#' + CSS.escape(n.id)); break;
      }
      let i = 1;
      for (let s = n.previousElementSibling; s; s = s.previousElementSibling) if (s.tagName === n.tagName) i++;
      parts.unshift(n.tagName.toLowerCase() + ':nth-of-type(' + i + ')');
    }
    return parts.join(' > ');
  };
  const labelOf = (el) => {
    let l = el.getAttribute('aria-label') || el.getAttribute('placeholder') || el.getAttribute('title') || '';
    if (!l && el.getAttribute('aria-labelledby')) {
      l = el.getAttribute('aria-labelledby').split(/\s+/).map(i => document.getElementById(i))
        .filter(Boolean).map(n => n.textContent).join(' ');
    }
    if (!l && el.id) {
      const f = document.querySelector('label[for="' + CSS.escape(el.id) + '"]'); if (f) l = f.innerText;
    }
    if (!l && el.closest('label')) l = el.closest('label').innerText;
    if (!l && el.name) l = el.name;
    return (l || '').trim();
  };
  const roleOf = (el) => {
    const r = el.getAttribute('role'); if (r) return r;
    const t = el.tagName.toLowerCase();
    if (t === 'a') return 'link';
    if (t === 'input') { const ty = (el.type || 'text').toLowerCase();
      if (['checkbox', 'radio'].includes(ty)) return ty;
      return ['button', 'submit', 'reset'].includes(ty) ? 'button' : 'textbox'; }
    if (t === 'textarea' || el.isContentEditable) return 'textbox';
    if (t === 'select') return 'combobox';
    return 'button';
  };
  // Where the element sits: its column's header, the labels and headings of the groups around it.
  const contextOf = (el) => {
    const bits = [];
    const cell = el.closest('td, th');
    const table = cell && cell.closest('table');
    if (table) {
      const head = table.tHead ? table.tHead.rows[0] : table.rows[0];
      const hc = head && head.cells[cell.cellIndex];
      if (hc) bits.push(hc.innerText);
    }
    // A control in a table row ("deactivate" next to Carol) is told apart from its look-alikes by the row.
    // (Not a header row: its cells name the columns, which `within` already matches by the column's header.)
    const row = el.closest('th, thead, [role=columnheader]') ? null : el.closest('tr, [role=row]');
    if (row) bits.push((row.innerText || row.textContent || '').replace(/\s+/g, ' ').slice(0, 80));
    const groups = 'fieldset, section, article, form, li, dialog, details, nav, header, footer, aside, '
      + '[role=menu], [role=group], [role=dialog], [role=region], [role=listbox]';
    for (let n = el.parentElement, d = 0; n && d < 8 && bits.length < 4; n = n.parentElement, d++) {
      const named = n.getAttribute('aria-label'); if (named) bits.push(named);
      if (n.matches(groups)) {
        const h = n.querySelector('legend, h1, h2, h3, h4, h5, h6, summary, caption');
        if (h && !h.contains(el)) bits.push(h.innerText);
      }
    }
    return bits.map(b => b.trim()).filter(Boolean).join(' | ').slice(0, 160);
  };
  const describe = (el) => {
    const b = el.getBoundingClientRect();
    const tag = el.tagName.toLowerCase();
    const text = (tag === 'input' && ['button', 'submit', 'reset'].includes(el.type)) ? el.value
      : (tag === 'select' ? [...el.options].map(o => o.text).join(' | ') : (el.innerText || el.textContent || ''));
    const role = roleOf(el);
    const popup = el.hasAttribute('aria-haspopup') || el.getAttribute('aria-expanded') === 'false'
      || tag === 'summary' || tag === 'select';
    return {role, text: text.trim().replace(/\s+/g, ' ').slice(0, 200), label: labelOf(el), id: el.id || '',
      locator: path(el), hover: getComputedStyle(el).visibility === 'hidden',
      bounds: [Math.round(b.x), Math.round(b.y), Math.round(b.width), Math.round(b.height)],
      editable: role === 'textbox' || role === 'combobox', href: tag === 'a' ? el.href : '',
      context: contextOf(el), popup};
  };
"""
#: Collects the visible interactive elements, and those the page shows when the pointer is over them.
_OBSERVE_JS = (
    "() => {"
    + _HELPERS_JS
    + r"""
  const sel = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [role=button], [role=link],'
    + ' [role=tab], [role=checkbox], [role=menuitem], [role=switch], [role=option], [onclick], [contenteditable=true]';
  // Controls the page's own style sheets show only under the pointer (`tr:hover .action {visibility: visible}`):
  // the parts of those rules without `:hover`, which an element or one of its ancestors matches.
  const revealers = [];
  const collect = (rules) => {
    for (const r of rules || []) {
      if (r.cssRules && !r.selectorText) { collect(r.cssRules); continue; }
      if (!r.selectorText || !r.selectorText.includes(':hover') || r.style.visibility !== 'visible') continue;
      for (const one of r.selectorText.split(',')) {
        if (one.includes(':hover')) revealers.push(one.replace(/:hover/g, '').trim());
      }
    }
  };
  for (const sheet of document.styleSheets) {
    try { collect(sheet.cssRules); } catch (e) { /* another origin's sheet cannot be read */ }
  }
  const revealed = (el) => revealers.some((s) => { try { return !!el.closest(s); } catch (e) { return false; } });
  const out = [];
  for (const el of document.querySelectorAll(sel)) {
    const b = el.getBoundingClientRect(); const st = getComputedStyle(el);
    if (b.width === 0 || b.height === 0 || st.display === 'none' || el.disabled) continue;
    if (st.visibility === 'hidden' && !revealed(el)) continue;
    out.push(describe(el));
  }
  return out;
}"""
)
#: Describes one element a Playwright locator found (by accessible name), as the observer would.
_DESCRIBE_JS = "(el) => {" + _HELPERS_JS + " return describe(el); }"
#: The page as a navigation target: its address, title and headings.
_WHERE_JS = """() => ({url: location.href, title: document.title,
  headings: [...document.querySelectorAll('h1, h2')].filter(h => h.checkVisibility()).slice(0, 6)
.map(h => h.innerText.trim()).join(' | ')})"""

#: Where the pointer goes to show a control revealed on hover: inside the edge of its closest shown ancestor.
_HOVER_SPOT_JS = """(el) => {
  let n = el.parentElement;
  while (n && getComputedStyle(n).visibility !== 'visible') n = n.parentElement;
  if (!n) return null;
  n.scrollIntoView({block: 'center'});
  const b = n.getBoundingClientRect();
  return [b.x + Math.min(4, b.width / 2), b.y + b.height / 2];
}"""
#: How long a click waits for its control before looking for a notice that covers it.
COVERED_CLICK_MS = 4000
#: Closes the notice over an element: the close control (×, "Close", a dismiss attribute) of the topmost element
#: at the element's centre or of an ancestor of it. True when one was pressed.
_DISMISS_JS = """(el) => {
  const b = el.getBoundingClientRect();
  let n = document.elementFromPoint(b.x + b.width / 2, b.y + b.height / 2);
  const closer = '[aria-label*="close" i], [aria-label*="dismiss" i], [data-dismiss], [data-bs-dismiss], .close, '
    + '.btn-close, button[title*="close" i]';
  for (; n && n !== document.body && !n.contains(el); n = n.parentElement) {
    const named = (x) => /^\\s*(×|✕|x|close|dismiss)\\s*$/i.test(x.innerText);
    const c = n.matches(closer) ? n : n.querySelector(closer)
      || [...n.querySelectorAll('button, a, [role=button]')].find(named);
    if (c) { c.click(); return true; }
  }
  return false;
}"""
#: The longest wait for the requests an action started.
SETTLE_SECONDS = 3.0
#: Resolves once the DOM has not changed for 150 ms (at most 1.5 s: an animated page never stops).
_QUIET_JS = """
() => new Promise((resolve) => {
  let timer = null;
  const obs = new MutationObserver(() => { clearTimeout(timer); timer = setTimeout(done, 150); });
  function done() { obs.disconnect(); resolve(true); }
  obs.observe(document, {subtree: true, childList: true, characterData: true, attributes: true});
  timer = setTimeout(done, 150);
  setTimeout(done, 1500);
})
"""
_RESOURCE_FAILURE = re.compile(r"^Failed to load resource\b")
#: The requests whose 5xx answer is the app failing: the document and the calls of its scripts.
_APP_RESOURCES = frozenset({"document", "xhr", "fetch"})
#: At most this many blocked addresses are kept for the report.
MAX_BLOCKED = 50
_FIELD_ROLES = ("textbox", "combobox", "searchbox", "spinbutton", "checkbox", "radio")
_PRESS_ROLES = ("button", "link", "tab", "menuitem", "checkbox", "radio", "switch", "option", "combobox")
#: Named viewport sizes a step may ask for.
_SIZES = {"narrow": (375, 740), "landscape": (1024, 600), "portrait": (600, 1024), "wide": (1280, 800)}


def _elsewhere(app_url: str, *, socket: bool = False) -> re.Pattern[str]:
    """Addresses that are not on the app's origin (nor data:, blob: or about:), spelled as the browser does.

    `socket`: for WebSocket addresses, whose scheme is ws or wss on the same host and port.
    """
    parts = urlsplit(app_url)
    scheme = {"http": "ws", "https": "wss"}.get(parts.scheme, parts.scheme) if socket else parts.scheme
    default = {"http": 80, "https": 443}.get(parts.scheme)
    port = f":{parts.port}" if parts.port and parts.port != default else ""
    host = (parts.hostname or "").lower()
    host = f"[{host}]" if ":" in host else host  # an IPv6 address is bracketed in a URL
    own = re.escape(f"{scheme}://{host}{port}/")
    return re.compile(rf"^(?!(?:{own}|data:|blob:|about:))")


def _element(r: dict[str, Any]) -> Element:
    """An Element from the observer's JSON."""
    return Element(
        role=r["role"],
        text=r["text"],
        label=r["label"],
        id=r["id"],
        bounds=(r["bounds"][0], r["bounds"][1], r["bounds"][2], r["bounds"][3]),
        locator=r["locator"],
        editable=bool(r["editable"]),
        href=r.get("href") or "",
        context=r.get("context") or "",
        popup=bool(r.get("popup")),
        hover=bool(r.get("hover")),
    )


@contextlib.asynccontextmanager
async def shared_browser(executable: str = CHROMIUM) -> AsyncIterator[Any]:
    """One chromium for many runs (an eval, a test module): each WebDriver on it gets its own fresh context."""
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import async_playwright

    if not Path(executable).exists():
        raise DriverError(f"chromium not found at {executable} (apt-get install chromium)")
    async with async_playwright() as pw:
        try:
            browser = await pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        except PlaywrightError as exc:
            raise DriverError(f"chromium did not start: {str(exc).splitlines()[0]}") from None
        try:
            yield browser
        finally:
            await browser.close()


class WebDriver:
    """A Playwright page on chromium, with page errors, console errors and 5xx answers collected as signals."""

    name = "web"

    def __init__(
        self,
        app_url: str,
        *,
        executable: str = CHROMIUM,
        headless: bool = True,
        timeout_ms: int = 5000,
        browser: Any = None,
    ):
        """`browser`: a running Playwright browser to share (it stays open on close); None launches one."""
        self.app_url = app_url
        self._shared_browser = browser
        self.executable = executable
        self.headless = headless
        self.timeout_ms = timeout_ms
        self._pw: Any = None
        self._browser: Any = None
        self._context: Any = None
        self._page: Any = None
        self._signals: list[Signal] = []
        self._document: bytes = b""
        self._pending = 0
        self.origin = origin_of(app_url)
        #: Requests to other hosts than the app's, aborted (the run goes on without them), in order, once each.
        self.blocked: list[str] = []
        #: A script of another host was kept out of the current document: its errors may be our doing.
        self._blocked_script = False
        #: The last address on the app's origin the page showed (where a blocked navigation returns to).
        self._last_url = app_url

    async def __aenter__(self) -> WebDriver:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Launch chromium and open the app (http or https only: a file:// URL would show the runner's files)."""
        if urlsplit(self.app_url).scheme not in ("http", "https"):
            raise DriverError(f"the web driver opens http(s) URLs only, not {self.app_url!r}")
        from playwright.async_api import Error as PlaywrightError
        from playwright.async_api import async_playwright

        if self._shared_browser is not None:
            self._browser = self._shared_browser
            await self.restart()
            return
        if not Path(self.executable).exists():
            raise DriverError(f"chromium not found at {self.executable} (apt-get install chromium)")
        self._pw = await async_playwright().start()
        try:
            # --no-sandbox: the runner may run as root in a container, where chromium's own sandbox cannot start.
            self._browser = await self._pw.chromium.launch(
                executable_path=self.executable, headless=self.headless, args=["--no-sandbox"]
            )
        except PlaywrightError as exc:
            await self._pw.stop()
            raise DriverError(f"chromium did not start: {str(exc).splitlines()[0]}") from None
        await self.restart()

    async def restart(self) -> None:
        """A fresh browser context (no cookies, no storage) on the app's first page."""
        from playwright.async_api import Error as PlaywrightError

        if self._context is not None:
            await self._context.close()
        self._context = await self._browser.new_context(viewport={"width": 1024, "height": 768})
        self._context.set_default_timeout(self.timeout_ms)
        # Confinement: every request of every page that is not for the app's origin goes to the guard, which
        # aborts it. The pattern is matched in the browser's driver, so the app's own requests never wait on us.
        await self._context.route(_elsewhere(self.app_url), self._guard)
        await self._context.route_web_socket(_elsewhere(self.app_url, socket=True), self._guard_socket)
        self._blocked_script = False
        page = await self._context.new_page()
        page.on("pageerror", lambda exc: self._signals.append(Signal("page_error", str(exc))))
        page.on("console", self._on_console)
        page.on("response", self._on_response)
        page.on("request", self._on_request)
        page.on("requestfinished", self._on_request_done)
        page.on("requestfailed", self._on_request_done)
        self._pending = 0
        self._page = page
        try:
            response = await page.goto(self.app_url, wait_until="load")
        except PlaywrightError as exc:
            raise DriverError(f"cannot open {self.app_url}: {str(exc).splitlines()[0]}") from None
        self._document = await response.body() if response is not None else b""
        self._last_url = page.url
        await self._settle()

    async def _guard(self, route: Any) -> None:
        """Let requests to the app's origin (and data:/blob: URLs) through; abort and record any other."""
        from playwright.async_api import Error as PlaywrightError

        request = route.request
        url = request.url
        with contextlib.suppress(PlaywrightError):  # the page may be gone (a restart closed its context)
            if urlsplit(url).scheme in ("data", "blob", "about") or origin_of(url) == self.origin:
                await route.continue_()
                return
            if url not in self.blocked and len(self.blocked) < MAX_BLOCKED:
                self.blocked.append(url)
            if request.resource_type == "script":
                self._blocked_script = True
            log.info("blocked a request to another host: %s %s", request.method, url)
            await route.abort("blockedbyclient")

    async def _guard_socket(self, ws: Any) -> None:
        """A WebSocket to another host is never connected: recorded, and closed on the page's side."""
        if ws.url not in self.blocked and len(self.blocked) < MAX_BLOCKED:
            self.blocked.append(ws.url)
        log.info("blocked a WebSocket to another host: %s", ws.url)
        await ws.close(code=1008, reason="another host than the app's")

    def _on_console(self, msg: Any) -> None:
        # A failed resource load is the network's signal (the 5xx oracle judges it), not a script error:
        # a missing favicon must not count as the bug.
        if msg.type == "error" and not _RESOURCE_FAILURE.match(msg.text):
            self._signals.append(Signal("console_error", msg.text))

    def _on_request(self, request: Any) -> None:
        self._pending += 1

    def _on_request_done(self, request: Any) -> None:
        self._pending = max(0, self._pending - 1)

    def _on_response(self, response: Any) -> None:
        # The app failing is a 5xx on the page itself or on a call its scripts make; an image or a font that
        # fails is not the reported bug.
        if response.status >= 500 and response.request.resource_type in _APP_RESOURCES:
            self._signals.append(
                Signal(
                    "http_5xx",
                    f"{response.status} {response.request.method} {response.url}",
                    {"status": response.status},
                )
            )

    async def _settle(self) -> None:
        """Let the page finish what the last action started (requests, timers that render)."""
        # Requests the action started are awaited (up to SETTLE_SECONDS: a page that polls never goes quiet),
        # then the DOM must stay unchanged for a moment, so what their handlers render is on screen when we judge.
        from playwright.async_api import Error as PlaywrightError

        end = time.monotonic() + SETTLE_SECONDS
        await asyncio.sleep(0.05)
        while self._pending and time.monotonic() < end:
            await asyncio.sleep(0.02)
        try:
            await self._page.wait_for_load_state("load")
            await self._page.evaluate(_QUIET_JS)
        except PlaywrightError:
            # A navigation replaced the document while we watched it: wait for the new one instead.
            with contextlib.suppress(PlaywrightError):
                await self._page.wait_for_load_state("load")

    async def observe(self) -> list[Element]:
        """The visible interactive elements."""
        raw = await self._page.evaluate(_OBSERVE_JS)
        return [_element(r) for r in raw]

    async def visible_text(self) -> str:
        """The page's rendered text plus the values shown in its form fields."""
        text: str = await self._page.evaluate(
            "() => document.body.innerText + '\\n' + [...document.querySelectorAll('input, textarea')]"
            ".map(e => e.value).join('\\n')"
        )
        return text

    async def act(self, action: dict[str, object], element: Element | None) -> None:
        """Perform one action; a vanished element or a timeout is a DriverError."""
        from playwright.async_api import Error as PlaywrightError

        kind, value = str(action["action"]), str(action.get("input") or "")
        page = self._page
        try:
            if kind in ("click", "long_click", "input") and element is None:
                raise DriverError(f"{kind} needs an element")
            if kind == "click" and element is not None:
                loc = page.locator(element.locator)
                if element.hover:
                    # The control shows only under the pointer: the pointer goes over its row first, as a user's
                    # does (a hidden element is not under the pointer, so it is the shown part around it).
                    spot = await loc.evaluate(_HOVER_SPOT_JS)
                    if spot:
                        await page.mouse.move(spot[0], spot[1])
                if element.role == "combobox" and value:
                    await loc.select_option(label=value)
                else:
                    await self._click(loc)
            elif kind == "long_click" and element is not None:
                await page.locator(element.locator).click(delay=800)
            elif kind == "input" and element is not None:
                loc = page.locator(element.locator)
                if element.role == "combobox":
                    await loc.select_option(label=value)
                else:
                    await loc.fill(value)
                    # Apps that react on change, not input, see the edit once the field loses focus.
                    await loc.dispatch_event("change")
            elif kind == "key":
                await page.keyboard.press(value or "Enter")
            elif kind == "scroll":
                await page.mouse.wheel(0, -600 if value == "up" else 600)
            elif kind == "back":
                await page.go_back(wait_until="load")
            elif kind == "resize":
                size = _SIZES.get(value)
                if size is None:
                    m = re.fullmatch(r"(\d{3,4})x(\d{3,4})", value)
                    size = (int(m.group(1)), int(m.group(2))) if m else _SIZES["narrow"]
                await page.set_viewport_size({"width": size[0], "height": size[1]})
            elif kind == "restart":
                await self.restart()
                return
            elif kind == "navigate":
                await self._navigate(value)
            else:
                raise DriverError(f"unknown action {kind!r}")
        except PlaywrightError as exc:
            raise DriverError(f"{kind} failed: {str(exc).splitlines()[0]}") from None
        await self._settle()
        await self._stay_on_the_app()

    async def _click(self, loc: Any) -> None:
        """Click; when a notice lies over the control (a flash message, a banner), close it as a user would, then
        click again. What the notice says stays on the page's text until then, for the oracle."""
        from playwright.async_api import Error as PlaywrightError

        try:
            await loc.click(timeout=COVERED_CLICK_MS)
        except PlaywrightError as exc:
            if "intercepts pointer events" not in str(exc):
                await loc.click()  # a control that is slow to show gets the driver's whole timeout
                return
            closed = await loc.evaluate(_DISMISS_JS)
            log.info("a notice covers %s: %s", loc, "closed it" if closed else "pressing Escape")
            if not closed:
                await self._page.keyboard.press("Escape")
            await self._settle()
            await loc.click()

    async def _navigate(self, path: str) -> None:
        """Open a page of the app: `path` is relative to the app's address ("" is the app's first page)."""
        url = urljoin(self.app_url, path)
        if origin_of(url) != self.origin:
            raise DriverError(f"navigate stays on the app's origin {self.origin}, not {url}")
        self._blocked_script = False
        await self._page.goto(url, wait_until="load")

    async def _stay_on_the_app(self) -> None:
        """After a navigation to another host was blocked, go back to the app's last page and go on."""
        from playwright.async_api import Error as PlaywrightError

        url = self._page.url
        if origin_of(url) == self.origin:
            self._last_url = url
            return
        log.info("the page left the app (%s): back to %s", url, self._last_url)
        try:
            await self._page.goto(self._last_url, wait_until="load")
        except PlaywrightError as exc:
            raise DriverError(f"cannot return to {self._last_url}: {str(exc).splitlines()[0]}") from None
        await self._settle()

    async def location(self) -> dict[str, str]:
        """Where the page is: `url`, `path` (relative to the app's origin), `title`, `headings` (h1 and h2)."""
        where: dict[str, str] = await self._page.evaluate(_WHERE_JS)
        parts = urlsplit(where["url"])
        where["path"] = parts.path + (f"?{parts.query}" if parts.query else "")
        return where

    async def locate(self, name: str, editable: bool) -> Element | None:
        """The visible element whose accessible name (Playwright's get_by_label / get_by_role) is like `name`.

        It finds what the observer's text misses: a field named by a heading through aria-labelledby, an icon
        button named by its title or hidden text. The name matches loosely: its words in order, a few words
        apart at most, any case.
        """
        from playwright.async_api import Error as PlaywrightError

        wanted = core_words(name)
        if not wanted:
            return None
        pattern = re.compile(r"\b" + r"\W+(?:\w+\W+){0,3}?".join(map(re.escape, wanted)), re.I)
        page = self._page
        locators = [page.get_by_label(pattern)] if editable else []
        locators += [page.get_by_role(role, name=pattern) for role in (_FIELD_ROLES if editable else _PRESS_ROLES)]
        try:
            for locator in locators:
                for i in range(min(await locator.count(), 5)):
                    item = locator.nth(i)
                    if await item.is_visible():
                        return _element(await item.evaluate(_DESCRIBE_JS))
        except PlaywrightError as exc:
            log.info("locate %r: %s", name, str(exc).splitlines()[0])
        return None

    def blocked_requests(self) -> list[str]:
        """The addresses of other hosts the page tried to reach, each aborted."""
        return list(self.blocked)

    async def screenshot(self, path: Path) -> None:
        """A PNG of the viewport."""
        path.parent.mkdir(parents=True, exist_ok=True)
        await self._page.screenshot(path=str(path))

    def drain_signals(self) -> list[Signal]:
        """Signals since the last call; script errors after a blocked script of another host are marked so."""
        out, self._signals = self._signals, []
        if self._blocked_script:
            # "$ is not defined" after the CDN's jQuery was kept out is the confinement's doing, not the bug.
            out = [
                Signal(s.kind, s.message, {**s.detail, "after_blocked_script": True})
                if s.kind in ("page_error", "console_error")
                else s
                for s in out
            ]
        return out

    async def app_version(self) -> str:
        """A hash of the app's first document: a new build of the page is a new version."""
        return hashlib.sha256(self._document).hexdigest()[:16]

    async def close(self) -> None:
        """Close the browser and Playwright."""
        if self._context is not None:
            await self._context.close()
            self._context = None
        if self._browser is not None and self._shared_browser is None:
            await self._browser.close()
        self._browser = None
        if self._pw is not None:
            await self._pw.stop()
            self._pw = None
