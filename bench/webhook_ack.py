"""Webhook ack latency (p50/p99) and throughput: reprobot's /webhooks/github vs a bare aiohttp 200 handler.

Both servers run side by side in one child process on 127.0.0.1; the client (this process) sends the same
number of signed `issues.labeled` deliveries to each, alternating batches, so both see the same conditions.
Every reprobot delivery is new: it is verified, deduplicated, recorded and turned into a queued job (202).
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import multiprocessing
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.config import Settings
from bot.server import make_app

SECRET = "bench-secret"
REQUESTS = 1500
CONCURRENCY = 8
BATCH = 100


def _payload() -> bytes:
    issue = {"number": 1, "title": "gcd() raises RecursionError", "body": "```python\nprint(gcd(13, 13))\n```"}
    data = {
        "action": "labeled",
        "issue": issue | {"html_url": "https://github.com/o/r/issues/1", "user": {"login": "u", "type": "User"}},
        "label": {"name": "reprobot:fix"},
        "repository": {"full_name": "o/r", "name": "r", "owner": {"login": "o"}, "default_branch": "main"},
        "sender": {"login": "u", "type": "User"},
        "installation": {"id": 1},
    }
    return json.dumps(data).encode()


def _serve(data_dir: str, ports: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    async def bare(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=200)

    async def main() -> None:
        plain = web.Application()
        plain.router.add_post("/hook", bare)
        settings = Settings(data_dir=Path(data_dir), github_webhook_secret=SECRET)
        out = []
        for app in (plain, make_app(settings)):
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            out.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        ports.put(out)
        await asyncio.Event().wait()

    asyncio.run(main())


async def _batch(session: aiohttp.ClientSession, url: str, body: bytes, n: int, lat: list[float]) -> None:
    sig = "sha256=" + hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one() -> None:
        headers = {"Content-Type": "application/json", "X-GitHub-Event": "issues"}
        headers |= {"X-GitHub-Delivery": str(uuid.uuid4()), "X-Hub-Signature-256": sig}
        async with sem:
            start = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as resp:
                await resp.read()
                assert resp.status in (200, 202), resp.status
            lat.append(time.perf_counter() - start)

    await asyncio.gather(*(one() for _ in range(n)))


async def _measure(bare_url: str, bot_url: str) -> dict[str, tuple[list[float], float]]:
    body = _payload()
    results: dict[str, tuple[list[float], float]] = {"bare": ([], 0.0), "reprobot": ([], 0.0)}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CONCURRENCY)) as session:
        await _batch(session, bare_url, body, 50, [])  # warm up both
        await _batch(session, bot_url, body, 50, [])
        for _ in range(REQUESTS // BATCH):
            for name, url in (("bare", bare_url), ("reprobot", bot_url)):
                lat, spent = results[name]
                start = time.perf_counter()
                await _batch(session, url, body, BATCH, lat)
                results[name] = (lat, spent + time.perf_counter() - start)
    return results


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1000 if q < 100 else max(values) * 1000


def main() -> None:
    """Run the measurement and print one line per server plus the ratios against the targets."""
    ctx = multiprocessing.get_context("spawn")
    ports: multiprocessing.Queue = ctx.Queue()  # type: ignore[type-arg]
    with tempfile.TemporaryDirectory() as data_dir:
        proc = ctx.Process(target=_serve, args=(data_dir, ports), daemon=True)
        proc.start()
        try:
            bare_port, bot_port = ports.get(timeout=60)
            res = asyncio.run(
                _measure(f"http://127.0.0.1:{bare_port}/hook", f"http://127.0.0.1:{bot_port}/webhooks/github")
            )
        finally:
            proc.terminate()
            proc.join()
    print(f"webhook_ack: {REQUESTS} requests per server, concurrency {CONCURRENCY}, loopback, side by side")
    rates = {}
    for name, (lat, spent) in res.items():
        rates[name] = len(lat) / spent
        label = "bare aiohttp 200" if name == "bare" else "reprobot /webhooks/github (verify+dedupe+enqueue)"
        print(f"  {label:52s} p50 {_pct(lat, 50):6.2f} ms  p99 {_pct(lat, 99):6.2f} ms  {rates[name]:8.0f} req/s")
    ratio = rates["reprobot"] / rates["bare"]
    p99 = _pct(res["reprobot"][0], 99)
    print(f"  throughput ratio reprobot/bare = {ratio:.2f} (target >= 0.50: {'met' if ratio >= 0.5 else 'MISSED'})")
    print(f"  reprobot p99 = {p99:.2f} ms (target <= 25 ms: {'met' if p99 <= 25 else 'MISSED'})")


if __name__ == "__main__":
    main()
