"""Missing special method: the error names a protocol (len, iteration, truth) that a class of the repo lacks.

`len(obj)` on a class without `__len__` fails with "object of type 'Bag' has no len()", iterating it with
"'Bag' object is not iterable", and an explicit `obj.__bool__()` with "has no attribute '__bool__'". The
fix that fits most such reports is the method, delegating to the container the class keeps in an attribute:
`def __len__(self): return len(self.items)`. These candidates come from the failing output, not from a
suspicious line, so the search tries them per file before the line templates.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

__all__ = ["ProtocolFix", "missing_protocols", "special_method_candidates"]

#: Error messages (CPython's wording) -> the special method whose absence they report.
_MESSAGES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"object of type '([A-Za-z_]\w*)' has no len\(\)"), "__len__"),
    (re.compile(r"'([A-Za-z_]\w*)' object is not iterable"), "__iter__"),
    (re.compile(r"argument of type '([A-Za-z_]\w*)' is not iterable"), "__iter__"),
    (re.compile(r"'([A-Za-z_]\w*)' object has no attribute '(__bool__|__len__|__iter__)'"), ""),
)
#: The special methods this template adds, and how each delegates to a container attribute `a`.
_BODIES: dict[str, tuple[str, ...]] = {
    "__len__": ("len(self.{a})",),
    "__iter__": ("iter(self.{a})",),
    "__bool__": ("bool(self.{a})",),
}
#: Container attributes tried per class (the ones assigned first in `__init__` come first).
ATTRIBUTE_LIMIT = 4
_CONTAINER_CALLS = frozenset({"list", "dict", "set", "tuple", "frozenset", "deque", "OrderedDict", "defaultdict"})
_BUILTIN_NAMES = frozenset({"int", "float", "str", "bool", "NoneType", "list", "dict", "set", "tuple", "function"})


@dataclass(frozen=True)
class ProtocolFix:
    """One candidate: the class, the method added, a readable summary and the new source."""

    cls: str
    method: str
    description: str
    line: int
    new_source: str
    operator: str = "special_method"


def missing_protocols(error_text: str) -> list[tuple[str, str]]:
    """(class name, special method) pairs that the error output says are missing, first mention first.

    Built-in types are left out: `len(5)` is a wrong argument, not a class lacking a method.
    """
    found: list[tuple[int, str, str]] = []
    for pattern, method in _MESSAGES:
        for match in pattern.finditer(error_text):
            cls = match.group(1)
            if cls not in _BUILTIN_NAMES:
                found.append((match.start(), cls, method or match.group(2)))
    return list(dict.fromkeys((cls, method) for _, cls, method in sorted(found)))


def _container_attributes(cls: ast.ClassDef) -> list[str]:
    """Attributes assigned on self in the class's methods, containers (literal or constructor) first."""
    containers: list[str] = []
    others: list[str] = []
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    methods.sort(key=lambda m: m.name != "__init__")
    for method in methods:
        if not method.args.args:
            continue
        me = method.args.args[0].arg
        for node in ast.walk(method):
            if not isinstance(node, ast.Assign | ast.AnnAssign):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if not (
                    isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == me
                ):
                    continue
                value = node.value
                is_container = isinstance(
                    value, ast.List | ast.Dict | ast.Set | ast.Tuple | ast.ListComp | ast.DictComp | ast.SetComp
                ) or (
                    isinstance(value, ast.Call)
                    and isinstance(value.func, ast.Name | ast.Attribute)
                    and (value.func.id if isinstance(value.func, ast.Name) else value.func.attr) in _CONTAINER_CALLS
                )
                bucket = containers if is_container else others
                if target.attr not in containers and target.attr not in others:
                    bucket.append(target.attr)
    return (containers + others)[:ATTRIBUTE_LIMIT]


def _defines(cls: ast.ClassDef, name: str) -> bool:
    return any(isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == name for n in cls.body)


def special_method_candidates(source: str, error_text: str) -> list[ProtocolFix]:
    """Sources with a missing special method added to a class of `source` that the error names.

    One candidate per container attribute of the class (and, for `__bool__` on a sized class, `len(self) > 0`).
    The method goes after the class's last statement, with the body's indentation; nothing else changes.
    """
    wanted = missing_protocols(error_text)
    if not wanted:
        return []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    lines = source.split("\n")
    out: list[ProtocolFix] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        for cls_name, method in wanted:
            if node.name != cls_name or _defines(node, method):
                continue
            bodies = [b.format(a=a) for a in _container_attributes(node) for b in _BODIES[method]]
            if method == "__bool__" and _defines(node, "__len__"):
                bodies.insert(0, "len(self) > 0")
            first = node.body[0]
            indent = lines[first.lineno - 1][: first.col_offset]
            end = node.end_lineno or node.lineno
            for body in bodies:
                code = f"\n{indent}def {method}(self):\n{indent}    return {body}\n"
                new_lines = [*lines[:end], *code.rstrip("\n").split("\n"), *lines[end:]]
                new_source = "\n".join(new_lines)
                try:
                    compile(new_source, "<protocol>", "exec", dont_inherit=True)
                except (SyntaxError, ValueError):
                    continue
                out.append(
                    ProtocolFix(
                        cls=cls_name,
                        method=method,
                        description=f"add `{method}` to class {cls_name}: `return {body}`",
                        line=end + 2,
                        new_source=new_source,
                    )
                )
    return out
