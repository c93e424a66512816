"""Navigation steps on the web: "open the home page", "go to the invoices", "back to the list".

A navigation goes to a page of the app, never to another host, and is found in this order:

1. "" is the app's first page (the address it was started on), "/path" that path on the app's origin;
2. nothing to do when the page shown is the one named (its title, an h1/h2 heading or its path);
3. the same-origin link on the page whose text, label or path best matches the name (made-up example: "go to
   the invoices" -> the link "Invoices (3)" to /billing/invoices);
4. else the pages those links lead to, breadth first, best-matching links first, within MAX_PAGES and the time
   budget, each scored like the page shown.

When none is found the caller treats the step as a click on a control of that name (a tab of a one-page app),
which may explore the UI.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit

from agents.app.driver import Driver, DriverError, Element
from agents.app.textmatch import similarity

#: A page or link scoring this much names the page the step means.
NAV_MATCH = 0.5
#: Pages the link search opens at most for one navigation step.
MAX_PAGES = 12
#: How far from the page shown the link search goes (links of links).
MAX_DEPTH = 2


def origin_of(url: str) -> str:
    """scheme://host:port of an address (the port spelled out), the unit the browser is confined to."""
    parts = urlsplit(url)
    try:
        port = parts.port or {"http": 80, "https": 443}.get(parts.scheme, 0)
    except ValueError:  # a malformed port: no origin the app has
        port = -1
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def relative(url: str) -> str:
    """The path and query of an address: what an action log keeps, so a replay works on another port."""
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


@runtime_checkable
class Navigator(Protocol):
    """What navigation needs beyond the Driver protocol (the web driver has it; Android does not)."""

    app_url: str

    async def location(self) -> dict[str, str]:
        """`url`, `path`, `title` and `headings` of the page shown."""
        ...

    async def locate(self, name: str, editable: bool) -> Element | None:
        """The visible element whose accessible name is like `name`."""
        ...


@dataclass(frozen=True)
class Destination:
    """Where a navigation step goes: `path` on the app's origin, or None when the page shown is it already."""

    path: str | None
    why: str


def _path_words(url: str) -> str:
    return " ".join(urlsplit(url).path.replace("-", " ").replace("_", " ").replace(".html", " ").split("/"))


def page_score(name: str, where: dict[str, str]) -> float:
    """How well the page shown is the page `name` names: its title, headings or path."""
    names = [where.get("title", ""), *where.get("headings", "").split(" | "), _path_words(where.get("url", ""))]
    return max((similarity(name, n) for n in names if n.strip()), default=0.0)


def link_score(name: str, element: Element) -> float:
    """How well a link leads to the page `name` names: its text, label or the path it points to."""
    names = [element.text, element.label, _path_words(element.href)]
    return max((similarity(name, n) for n in names if n.strip()), default=0.0)


def own_links(elements: list[Element], app_url: str) -> list[Element]:
    """The links of a screen that stay on the app's origin (the others are never followed)."""
    origin = origin_of(app_url)
    return [e for e in elements if e.href and origin_of(e.href) == origin and not e.href.startswith("javascript:")]


async def find_page(
    nav: Navigator, driver: Driver, name: str, elements: list[Element], deadline: float
) -> Destination | None:
    """Where the navigation to `name` goes from the page shown, or None when no page of the app is named so.

    The link search (step 4) leaves the browser on another page; the caller returns to its own (it replays).
    """
    where = await nav.location()
    root = urlsplit(nav.app_url)
    if not name or name.startswith("/"):
        target = name or relative(nav.app_url)
        here = relative(where["url"]) == target or (not name and urlsplit(where["url"]).path == root.path)
        return Destination(None, "the page shown") if here else Destination(name, "the path")
    links = own_links(elements, nav.app_url)
    best = max(links, key=lambda e: link_score(name, e), default=None)
    best_score = link_score(name, best) if best is not None else 0.0
    shown = page_score(name, where)
    # The page shown counts unless a link names the page better ("Order #1" is not what "orders" means when a
    # link "Orders" is on it).
    if shown >= NAV_MATCH and shown >= best_score:
        return Destination(None, "the page shown")
    if best is not None and best_score >= NAV_MATCH:
        if relative(best.href) == relative(where["url"]):
            return Destination(None, f"the page shown, which the link {best.text or best.label!r} opens")
        return Destination(relative(best.href), f"the link {best.text or best.label!r}")
    return await _search(nav, driver, name, links, deadline)


async def _search(
    nav: Navigator, driver: Driver, name: str, links: list[Element], deadline: float
) -> Destination | None:
    """Breadth first over the app's pages the links lead to, the best-matching links first."""
    queue = deque((relative(e.href), 1) for e in sorted(links, key=lambda e: -link_score(name, e)))
    seen = {relative((await nav.location())["url"])}
    opened = 0
    while queue and opened < MAX_PAGES and time.monotonic() < deadline:
        path, depth = queue.popleft()
        if path in seen:
            continue
        seen.add(path)
        opened += 1
        try:
            await driver.act({"action": "navigate", "target": "", "input": path}, None)
        except DriverError:
            continue
        where = await nav.location()
        if page_score(name, where) >= NAV_MATCH and origin_of(where["url"]) == origin_of(nav.app_url):
            driver.drain_signals()
            return Destination(relative(where["url"]), f"the page {where.get('title') or path!r}, found by search")
        if depth < MAX_DEPTH:
            more = own_links(await driver.observe(), nav.app_url)
            queue.extend((relative(e.href), depth + 1) for e in sorted(more, key=lambda e: -link_score(name, e)))
    driver.drain_signals()  # pages opened while searching are not the report's steps
    return None
