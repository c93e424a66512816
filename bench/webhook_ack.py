"""Webhook ack latency (p50/p99) and throughput: reprobot's /webhooks/github vs a bare aiohttp 200 handler.

Both servers run side by side in one child process on 127.0.0.1; the client (this process) sends the same
number of signed `issues.labeled` deliveries to each in alternating rounds (which server goes first alternates
too), so both see the same conditions. Every reprobot delivery is new: it is verified, deduplicated, its handler
plans a job, and the delivery with its plan is committed to the inbox before the 202. The throughput ratio is the
median of the per-round ratios, which keeps a burst of load from other processes (on a small machine) from
deciding the result; the pooled ratio is printed too.

Two deliveries are measured: a minimal synthetic `issues.labeled` (0.5 KB), and the recorded GitHub
`issues.labeled` payload from ../shared/fixtures (12 KB, as GitHub sends it: parsing and storing it cost more).

Turning the inbox into queued jobs is the worker's step, not the ack's. So that its cost is not hidden, the
benchmark then promotes every recorded delivery as a worker would and prints the time per delivery.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import inspect
import json
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bot.intake.server import make_app
from bot.settings.config import Settings
from bot.store import Store

#: This checkout (the code measured unless --baseline names another one too).
ROOT = Path(__file__).resolve().parents[1]
SECRET = "bench-secret"
ROUNDS = 15
BATCH = 200
REQUESTS = ROUNDS * BATCH
CONCURRENCY = 8
RECORDED = Path(__file__).resolve().parents[2] / "shared/fixtures/github/webhooks/issues/labeled.payload.json"


def _recorded_payload() -> bytes | None:
    """GitHub's recorded issues.labeled delivery, made to ask for a fix; None when ../shared is absent."""
    if not RECORDED.exists():
        return None
    data = json.loads(RECORDED.read_text())
    data["installation"] = {"id": 1}
    data["label"]["name"] = "reprobot:fix"
    return json.dumps(data, separators=(",", ":")).encode()  # compact, as GitHub sends it


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


def _serve(data_dir: str, database_url: str | None = None) -> None:
    """The server child: both apps on ephemeral ports, printed as one line "BARE_PORT BOT_PORT"."""

    async def bare(request: web.Request) -> web.Response:
        await request.read()
        return web.Response(status=200)

    async def main() -> None:
        plain = web.Application()
        plain.router.add_post("/hook", bare)
        settings = Settings(data_dir=Path(data_dir), github_webhook_secret=SECRET, database_url=database_url)
        out = []
        for app in (plain, make_app(settings)):
            runner = web.AppRunner(app, access_log=None)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            out.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        print(*out, flush=True)
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


Results = dict[str, tuple[list[float], float]]
#: One server child to measure: (label, bare aiohttp URL, reprobot URL); each child serves both.
Child = tuple[str, str, str]
KINDS = ("bare", "bot")


async def _measure(children: list[Child], body: bytes) -> tuple[Results, dict[str, list[float]]]:
    """Pooled latencies and time per server, and each child's reprobot/bare throughput ratio per round.

    Every round sends the same count to every server, in an order that reverses each round, so that several
    children (this checkout and a baseline) are measured side by side under the same load.
    """
    servers = [
        (f"{label} {kind}", url) for label, bare, bot in children for kind, url in (("bare", bare), ("bot", bot))
    ]
    results: Results = {name: ([], 0.0) for name, _ in servers}
    ratios: dict[str, list[float]] = {label: [] for label, _, _ in children}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CONCURRENCY)) as session:
        for _, url in servers:  # warm up every one
            await _batch(session, url, body, 100, [])
        for round_no in range(ROUNDS):
            spent_now = {}
            for name, url in servers if round_no % 2 == 0 else servers[::-1]:
                lat, spent = results[name]
                start = time.perf_counter()
                await _batch(session, url, body, BATCH, lat)
                spent_now[name] = time.perf_counter() - start
                results[name] = (lat, spent + spent_now[name])
            for label in ratios:  # same count each: a throughput ratio
                ratios[label].append(spent_now[f"{label} bare"] / spent_now[f"{label} bot"])
    return results, ratios


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] * 1000 if q < 100 else max(values) * 1000


def main() -> None:
    """Measure both deliveries and print one line per server plus the ratios against the targets.

    `--baseline DIR`: the recorded delivery is measured on each engine with the code of another checkout at DIR
    (e.g. main's) too, in the same rounds as this checkout's, so that before and after share one run.
    """
    argv = sys.argv[1:]
    baseline = Path(argv[argv.index("--baseline") + 1]).resolve() if "--baseline" in argv else None
    print(
        f"webhook_ack: {REQUESTS} requests per server in {ROUNDS} alternating rounds, concurrency {CONCURRENCY}, "
        "loopback, side by side"
    )
    _scenario("synthetic issues.labeled", _payload())
    recorded = _recorded_payload()
    if recorded is None:
        print(f"  recorded GitHub payload: skipped, {RECORDED} is absent")
    else:
        targets = [("this checkout", ROOT, None)]
        if baseline is not None:
            targets.append((f"baseline {baseline}", baseline, None))
        _scenario("recorded GitHub issues.labeled", recorded, targets)
    # The same recorded delivery with the store on PostgreSQL (REPROBOT_DATABASE_URL), a real local server.
    from tests.pg_server import pg_bin, running

    if pg_bin() is None:
        print("  postgresql: skipped, no pg_ctl under /usr/lib/postgresql/*/bin")
        return
    with running() as server:
        targets = [("this checkout", ROOT, server.new_database())]
        if baseline is not None:
            targets.append((f"baseline {baseline}", baseline, server.new_database()))
        _scenario("recorded GitHub issues.labeled [postgresql]", recorded or _payload(), targets, target=0.35)


def _scenario(
    name: str, body: bytes, targets: list[tuple[str, Path, str | None]] | None = None, *, target: float = 0.5
) -> None:
    """Measure each target (label, checkout, PostgreSQL URL or None for SQLite) side by side, then promote."""
    targets = targets or [("this checkout", ROOT, None)]
    with contextlib.ExitStack() as stack:
        children: list[Child] = []
        for label, code, database_url in targets:
            data_dir = stack.enter_context(tempfile.TemporaryDirectory())
            stack.callback(_report_promotion, code, data_dir, database_url, label)  # runs once its server stopped
            # A fresh interpreter running this file (not multiprocessing): it works the same under run_all.py;
            # the checkout's own copy of this file puts that checkout's bot first on sys.path.
            cmd = [sys.executable, str(code / "bench" / Path(__file__).name), "--serve", data_dir]
            proc = subprocess.Popen(
                [*cmd, *([database_url] if database_url else [])], stdout=subprocess.PIPE, text=True
            )
            stack.callback(proc.wait)
            stack.callback(proc.terminate)  # callbacks run last first: terminate, wait, then promote
            assert proc.stdout is not None
            bare_port, bot_port = (int(p) for p in proc.stdout.readline().split())
            bot_url = f"http://127.0.0.1:{bot_port}/webhooks/github"
            children.append((label, f"http://127.0.0.1:{bare_port}/hook", bot_url))
        res, ratios = asyncio.run(_measure(children, body))
        print(f" {name} delivery, {len(body):,} bytes:")
        for label, _, _ in children:
            _report(label, res, ratios[label], target)


def _report(label: str, res: Results, ratios: list[float], target: float) -> None:
    """Print one child's servers, its throughput ratio and its p99 against the targets."""
    rates = {}
    for kind, what in (("bare", "bare aiohttp 200"), ("bot", "reprobot /webhooks/github (verify+dedupe+record)")):
        lat, spent = res[f"{label} {kind}"]
        rates[kind] = len(lat) / spent
        print(f"  {what:52s} p50 {_pct(lat, 50):6.2f} ms  p99 {_pct(lat, 99):6.2f} ms  {rates[kind]:8.0f} req/s")
    ratio = statistics.median(ratios)
    p99 = _pct(res[f"{label} bot"][0], 99)
    spread = f"rounds {min(ratios):.2f}..{max(ratios):.2f}, pooled {rates['bot'] / rates['bare']:.2f}"
    print(
        f"  [{label}] throughput ratio reprobot/bare = {ratio:.2f} median of {ROUNDS} rounds ({spread}) "
        f"(target >= {target:.2f}: {'met' if ratio >= target else 'MISSED'})"
    )
    print(f"  [{label}] reprobot p99 = {p99:.2f} ms (target <= 25 ms: {'met' if p99 <= 25 else 'MISSED'})")


def _report_promotion(code: Path, data_dir: str, database_url: str | None, label: str) -> None:
    promoted, seconds = _promote_elsewhere(code, data_dir, database_url)
    print(
        f"  [{label}] worker-side promotion of the inbox into jobs (not in the ack path): {promoted} deliveries, "
        f"{seconds / max(promoted, 1) * 1e6:.0f} us each"
    )


def _promote_elsewhere(code: Path, data_dir: str, database_url: str | None) -> tuple[int, float]:
    """`_promote_all` in a fresh interpreter with the bot of the checkout at `code`: (promoted, seconds)."""
    snippet = (
        "import sys; sys.path.insert(0, sys.argv[1]); from pathlib import Path; "
        "from bot.settings.config import Settings; from bot.store import Store; import time\n"
        + inspect.getsource(_promote_all)
        + "\nurl = sys.argv[3] if len(sys.argv) > 3 else None\n"
        "print(*_promote_all(Settings(data_dir=Path(sys.argv[2]), database_url=url).store_target))"
    )
    args = [sys.executable, "-c", snippet, str(code), data_dir, *([database_url] if database_url else [])]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout.split()
    return int(out[0]), float(out[1])


def _promote_all(store_path: Path | str) -> tuple[int, float]:
    """Promote every delivery the run recorded, as workers do; (deliveries promoted, seconds spent)."""
    with Store.open(store_path) as store:
        pending = store.deliveries.pending_deliveries()
        start = time.perf_counter()
        while store.deliveries.pending_deliveries():
            store.deliveries.promote_deliveries()
        spent = time.perf_counter() - start
        assert store.deliveries.pending_deliveries() == 0
    return pending, spent


if __name__ == "__main__":
    if sys.argv[1:2] == ["--serve"]:
        _serve(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
    else:
        main()
