"""Checks HTTP requests against an OpenAPI 3 description: operation, path/query parameters, JSON body."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Operation:
    """One operation: method, path template, compiled matcher, its parameters and body schema."""

    op_id: str
    method: str
    template: str
    regex: re.Pattern[str]
    query: dict[str, dict[str, Any]]
    body: dict[str, Any] | None
    body_required: bool
    #: status code (text) -> the response's JSON schema, for operations whose answers the double checks.
    responses: dict[str, Any]


class OpenAPISpec:
    """The operations of a spec file; `match` finds one for a request and lists every way it does not fit."""

    def __init__(self, path: Path, *supplements: Path) -> None:
        self.doc = json.loads(path.read_text())
        # Operations the shared subset lacks, written in the project from GitHub's documentation: their paths
        # join the subset's, and their $refs resolve against its components.
        for extra in supplements:
            more = json.loads(extra.read_text())
            self.doc["paths"].update(more["paths"])
            for kind, items in more.get("components", {}).items():
                self.doc["components"].setdefault(kind, {}).update(items)
        self.operations: list[Operation] = []
        for template, item in self.doc["paths"].items():
            for method, op in item.items():
                if not isinstance(op, dict) or "operationId" not in op:
                    continue
                params = [self.resolve(p) for p in item.get("parameters", []) + op.get("parameters", [])]
                multi = {p["name"] for p in params if p["in"] == "path" and p.get("x-multi-segment")}
                pattern = re.sub(r"\{([^}]+)\}", lambda m, multi=multi: _group(m.group(1), multi), template)
                body = op.get("requestBody")
                schema = None
                if body:
                    body = self.resolve(body)
                    schema = body.get("content", {}).get("application/json", {}).get("schema")
                self.operations.append(
                    Operation(
                        op["operationId"],
                        method.upper(),
                        template,
                        re.compile(f"^{pattern}$"),
                        {p["name"]: p for p in params if p["in"] == "query"},
                        schema,
                        bool(body and body.get("required")),
                        {
                            status: self.resolve(reply).get("content", {}).get("application/json", {}).get("schema")
                            for status, reply in op.get("responses", {}).items()
                        },
                    )
                )

    def resolve(self, node: Any) -> Any:
        """Follow a local $ref."""
        while isinstance(node, dict) and "$ref" in node:
            target: Any = self.doc
            for part in node["$ref"].lstrip("#/").split("/"):
                target = target[part]
            node = target
        return node

    def match(
        self, method: str, path: str, query: dict[str, str], body: bytes
    ) -> tuple[Operation | None, dict[str, str], list[str]]:
        """(operation, path params, problems); operation is None when no operation has this method and path."""
        for op in self.operations:
            m = op.regex.match(path)
            if op.method != method or m is None:
                continue
            problems: list[str] = []
            for name, value in query.items():
                param = op.query.get(name)
                if param is None:
                    problems.append(f"{op.op_id}: unknown query parameter {name!r}")
                    continue
                schema = self.resolve(param.get("schema", {}))
                typed = value if schema.get("type") == "string" else _coerce(value)
                problems += self.check(schema, typed, f"query {name}")
            if op.body is None and body.strip():
                problems.append(f"{op.op_id}: takes no body")
            if op.body is not None:
                if not body.strip():
                    if op.body_required:
                        problems.append(f"{op.op_id}: body required")
                else:
                    try:
                        problems += self.check(op.body, json.loads(body), "body")
                    except ValueError:
                        problems.append(f"{op.op_id}: body is not JSON")
            return op, m.groupdict(), [f"{op.op_id}: {p}" for p in problems]
        return None, {}, [f"no operation for {method} {path}"]

    def check_response(self, op: Operation, status: int, value: Any) -> list[str]:
        """Problems of the double's answer: a status the operation does not document, or a body off its schema."""
        if str(status) not in op.responses:
            return [f"{op.op_id}: answered {status}, which the operation does not document"]
        schema = op.responses[str(status)]
        return [f"{op.op_id}: {p}" for p in self.check(schema, value, f"response {status}")] if schema else []

    def check(self, schema: Any, value: Any, where: str) -> list[str]:
        """Problems of `value` against `schema` (types, enum, required, properties, items, oneOf/anyOf)."""
        schema = self.resolve(schema)
        if not isinstance(schema, dict) or not schema:
            return []
        if value is None and schema.get("nullable"):
            return []
        for combo in ("oneOf", "anyOf"):
            if combo in schema:
                if any(not self.check(s, value, where) for s in schema[combo]):
                    return []
                return [f"{where}: {value!r} fits none of the {combo} alternatives"]
        problems: list[str] = []
        for sub in schema.get("allOf", []):
            problems += self.check(sub, value, where)
        kind = schema.get("type")
        checks = {
            "string": lambda v: isinstance(v, str),
            "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
            "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
            "boolean": lambda v: isinstance(v, bool),
            "object": lambda v: isinstance(v, dict),
            "array": lambda v: isinstance(v, list),
            "null": lambda v: v is None,
        }
        kinds = kind if isinstance(kind, list) else [kind] if kind else []
        if kinds and not any(checks[k](value) for k in kinds):
            return [f"{where}: {value!r} is not of type {kind}"]
        if "enum" in schema and value not in schema["enum"]:
            problems.append(f"{where}: {value!r} not in {schema['enum']}")
        if isinstance(value, dict):
            props = schema.get("properties", {})
            for name in schema.get("required", []):
                if name not in value:
                    problems.append(f"{where}: missing required {name!r}")
            for name, item in value.items():
                if name in props:
                    problems += self.check(props[name], item, f"{where}.{name}")
                elif schema.get("additionalProperties") is False:
                    problems.append(f"{where}: unknown property {name!r}")
        if isinstance(value, list):
            if len(value) < schema.get("minItems", 0):
                problems.append(f"{where}: fewer than {schema['minItems']} items")
            for i, item in enumerate(value):
                problems += self.check(schema.get("items", {}), item, f"{where}[{i}]")
        return problems


def _coerce(text: str) -> Any:
    """Query values arrive as text: read integers and booleans as such for the schema check."""
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return {"true": True, "false": False}.get(text, text)


def _group(name: str, multi: set[str]) -> str:
    """The regex group for a path parameter; x-multi-segment ones may span slashes."""
    return f"(?P<{name}>.+)" if name in multi else f"(?P<{name}>[^/]+)"
