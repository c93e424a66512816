"""A scripted OpenAI-compatible model server on 127.0.0.1: replays a script of replies, records every request.

A script is a YAML/JSON file with a `steps` list; each entry is one response to one POST /v1/chat/completions:

    - {thought: "...", tool: view_file, args: {path: gcd.py}}     # a tool call (args become JSON text)
    - {text: "..."}                                                 # a plain assistant message, no tool call
    - {thought: "...", tool: edit_file, raw_args: '{"path": '}      # a malformed call: raw argument text
    - {error: 429, retry_after: "1"}                                # an HTTP error (429/500/400 ...)
    - {hang: 30}                                                    # sleep before answering (client times out)

When the script runs out the server answers 400 "script exhausted", which the client never retries.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web

SCRIPTS = Path(__file__).resolve().parents[1] / "samples" / "llm_scripts"


def approx_tokens(text: str) -> int:
    """Four characters per token, the same approximation the client documents."""
    return (len(text) + 3) // 4


def load_script(name_or_path: str | Path) -> list[dict[str, Any]]:
    """The steps of a script file (by name under tests/samples/llm_scripts/, or a path)."""
    path = Path(name_or_path)
    if not path.exists():
        path = SCRIPTS / f"{name_or_path}.yaml"
    doc = yaml.safe_load(path.read_text())
    steps = doc["steps"] if isinstance(doc, dict) else doc
    if not isinstance(steps, list):
        raise ValueError(f"{path}: expected a list of steps")
    return steps


class ScriptedLLM:
    """The server. `async with ScriptedLLM(steps) as srv:` then point the client at `srv.base_url`."""

    def __init__(self, steps: list[dict[str, Any]] | None = None, model: str = "scripted-model") -> None:
        self.steps = list(steps or [])
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.served = 0
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    def extend(self, steps: list[dict[str, Any]]) -> None:
        """Append more scripted replies."""
        self.steps.extend(steps)

    async def __aenter__(self) -> ScriptedLLM:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": self.model, "object": "model"}]})

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(body)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        if self.served >= len(self.steps):
            return _error(400, "script exhausted")
        step = self.steps[self.served]
        self.served += 1
        if "hang" in step:
            await asyncio.sleep(float(step["hang"]))
        if "error" in step:
            headers = {"Retry-After": str(step["retry_after"])} if "retry_after" in step else {}
            return _error(int(step["error"]), step.get("message", "scripted error"), headers)
        return web.json_response(self._completion(body, step))

    def _completion(self, body: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
        content = step.get("thought", step.get("text", ""))
        message: dict[str, Any] = {"role": "assistant", "content": content}
        if "tool" in step:
            args = step["raw_args"] if "raw_args" in step else json.dumps(step.get("args", {}))
            message["tool_calls"] = [
                {"id": f"call_{self.served}", "type": "function", "function": {"name": step["tool"], "arguments": args}}
            ]
        prompt = approx_tokens(json.dumps(body.get("messages", []))) + approx_tokens(json.dumps(body.get("tools", [])))
        completion = approx_tokens(content + json.dumps(message.get("tool_calls", [])))
        return {
            "id": f"chatcmpl-{self.served}",
            "object": "chat.completion",
            "created": 0,
            "model": body.get("model", self.model),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if "tool" in step else "stop",
                }
            ],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response(
        {"error": {"message": message, "type": "scripted", "code": status}}, status=status, headers=headers
    )
