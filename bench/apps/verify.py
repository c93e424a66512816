"""Check every real-app case by hand-written ground truth: the failure shows on the buggy release only.

For each case, truth.json's scripted actions (Playwright selectors, not the agent) run on the buggy release and
then on the fixed one; the case passes when its failure (an HTTP 5xx, an uncaught page error, a console error
or a text on screen) is seen on the buggy release and not on the fixed one. `--build` only installs the
releases (what `make bench-apps` does first). Exit status 1 when a case fails.

    python bench/apps/verify.py [--build] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from appenv import ensure_venv
from cases import AppCase, load_app_cases, serve_case

CHROMIUM = "/usr/bin/chromium"


class Seen:
    """What one scripted run saw: page errors, console errors, 5xx answers, and the final text."""

    def __init__(self) -> None:
        """Nothing seen yet."""
        self.page_errors: list[str] = []
        self.console_errors: list[str] = []
        self.http_5xx: list[str] = []
        self.text = ""

    def shows(self, failure: dict[str, Any]) -> bool:
        """Whether the run shows `failure` ({"kind": ..., "match": a regex, or "text": a snippet shown or absent})."""
        kind = failure["kind"]
        if kind == "text":
            return str(failure["text"]).lower() in self.text.lower()
        if kind == "text_absent":  # the failure is something missing from the screen
            return str(failure["text"]).lower() not in self.text.lower()
        pattern = re.compile(str(failure.get("match", "")), re.I)
        seen = {"page_error": self.page_errors, "console_error": self.console_errors, "http_5xx": self.http_5xx}
        return any(pattern.search(s) for s in seen[kind])


async def _act(page: Any, action: dict[str, Any], base: str) -> None:
    """One scripted action: goto, click, fill, select, submit, hover, press, scroll or wait."""
    do, sel = action["do"], action.get("selector", "")
    if do == "goto":
        await page.goto(base.rstrip("/") + action["path"])
    elif do == "click":
        await page.click(sel, force=bool(action.get("force")))
    elif do == "fill":
        await page.fill(sel, action["value"])
    elif do == "select":
        await page.select_option(sel, label=action["value"])
    elif do == "submit":  # a form whose button is an icon the page only shows on hover
        await page.eval_on_selector(sel, "f => f.submit()")
        await page.wait_for_load_state("load")
    elif do == "hover":
        await page.hover(sel)
    elif do == "press":
        await page.keyboard.press(action["key"])
    elif do == "scroll":
        await page.evaluate("([s, y]) => { const e = document.querySelector(s); e.scrollTop = y; }", [sel, action["y"]])
    elif do == "wait":
        await page.wait_for_timeout(action["ms"])
    else:
        raise ValueError(f"unknown scripted action {do!r}")
    await page.wait_for_timeout(int(action.get("settle_ms", 400)))


async def play(browser: Any, url: str, actions: list[dict[str, Any]]) -> Seen:
    """Run the scripted actions from `url` in a fresh context; what was seen."""
    seen = Seen()
    context = await browser.new_context(viewport={"width": 1024, "height": 768})
    context.set_default_timeout(15000)
    page = await context.new_page()
    page.on("pageerror", lambda exc: seen.page_errors.append(str(exc)))
    page.on("console", lambda m: seen.console_errors.append(m.text) if m.type == "error" else None)
    page.on("response", lambda r: seen.http_5xx.append(f"{r.status} {r.url}") if r.status >= 500 else None)
    try:
        await page.goto(url, wait_until="load")
        for i, action in enumerate(actions, 1):
            try:
                await _act(page, action, url)
            except Exception as exc:
                raise RuntimeError(f"action {i} ({action}): {str(exc)[-600:]}") from None
        seen.text = await page.evaluate("() => document.body.innerText")
    finally:
        await context.close()
    return seen


async def verify_case(browser: Any, case: AppCase, logs: Path) -> dict[str, Any]:
    """Play the case's truth on both releases; the record says whether the failure is on the buggy one only."""
    truth = case.truth
    record: dict[str, Any] = {"name": case.name}
    for release in ("buggy", "fixed"):
        try:
            async with serve_case(case, fixed=release == "fixed", log=logs / f"{case.name}-{release}.log") as url:
                record[release] = (await play(browser, url, truth["actions"])).shows(truth["failure"])
        except Exception as exc:  # a broken case is reported, the others still run
            record[release] = None
            record["error"] = f"{release}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
    record["ok"] = record.get("buggy") is True and record.get("fixed") is False
    return record


def build(cases: list[AppCase]) -> None:
    """Install every case's buggy and fixed releases (cached: a built venv is reused)."""
    for case in cases:
        for version in (case.meta["buggy"], case.meta["fixed"]):
            print(f"{case.name}: {case.meta['package']}=={version}", flush=True)
            ensure_venv(str(case.meta["package"]), str(version), list(case.meta.get("pins", [])))


async def verify(cases: list[AppCase]) -> list[dict[str, Any]]:
    """Verify the cases one after another on one chromium."""
    from playwright.async_api import async_playwright

    records = []
    with tempfile.TemporaryDirectory(prefix="bench-apps-verify-") as tmp:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
            try:
                for case in cases:
                    record = await verify_case(browser, case, Path(tmp))
                    print(_row(record), flush=True)
                    records.append(record)
            finally:
                await browser.close()
    return records


def _row(r: dict[str, Any]) -> str:
    def mark(v: object) -> str:
        return {True: "failure shown", False: "no failure", None: "error"}[v]  # type: ignore[index]

    verdict = "ok" if r["ok"] else "FAILED"
    return f"{r['name']}: buggy {mark(r.get('buggy'))}, fixed {mark(r.get('fixed'))} -> {verdict} {r.get('error', '')}"


def main() -> None:
    """Build the releases, then (unless --build) verify the cases."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", action="store_true", help="only install the releases")
    parser.add_argument("--only", nargs="*", help="case names")
    args = parser.parse_args()
    cases = load_app_cases(only=set(args.only) if args.only else None)
    build(cases)
    if args.build:
        return
    records = asyncio.run(verify(cases))
    print(f"{sum(r['ok'] for r in records)}/{len(records)} cases verified")
    sys.exit(0 if all(r["ok"] for r in records) else 1)


if __name__ == "__main__":
    main()
