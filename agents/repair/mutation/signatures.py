"""What the module's own callables accept, and which of them it applies to a single value.

Computed once per file (`scope.build_context`) and read by the call-shaped templates in `calls.py`.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Signature:
    """What a callee accepts: positional bounds and keyword names (self/cls already removed)."""

    least: int  # positional parameters without a default
    most: float  # positional parameters in all (inf with *args)
    names: tuple[str, ...]  # parameters that may be passed by keyword
    any_keyword: bool  # **kwargs
    is_class: bool = False  # a class called through its __init__

    def accepts(self, positional: int, keywords: list[str]) -> bool:
        """Can a call with this many positional arguments and these keyword names bind?"""
        if not self.least <= positional <= self.most:
            return False
        return self.any_keyword or all(k in self.names for k in keywords)


def signature_of(func: ast.FunctionDef | ast.AsyncFunctionDef, *, bound: bool) -> Signature:
    """The signature of a def; `bound` drops its first parameter (a method called on an instance or class)."""
    args = func.args
    positional = [*args.posonlyargs, *args.args][1 if bound else 0 :]
    required = max(0, len(positional) - len(args.defaults))
    names = tuple(a.arg for a in [*args.args[1 if bound and not args.posonlyargs else 0 :], *args.kwonlyargs])
    most = math.inf if args.vararg else float(len(positional))
    return Signature(required, most, names, args.kwarg is not None)


def module_signatures(tree: ast.Module | None) -> dict[str, Signature]:
    """Module-level functions and classes (through their `__init__`) by name."""
    found: dict[str, Signature] = {}
    for node in tree.body if tree is not None else []:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.decorator_list:
            found[node.name] = signature_of(node, bound=False)
        elif isinstance(node, ast.ClassDef):
            init = next((s for s in node.body if isinstance(s, ast.FunctionDef) and s.name == "__init__"), None)
            if init is not None:
                sig = signature_of(init, bound=True)
                found[node.name] = Signature(sig.least, sig.most, sig.names, sig.any_keyword, is_class=True)
    return found


def applied_helpers(tree: ast.Module | None, functions: Mapping[str, Signature]) -> tuple[str, ...]:
    """Module functions the module itself calls somewhere with one positional argument and nothing else.

    Such a function is a converter or normaliser (`_unescape(raw)`, `_normalize(key)`): being applied to one
    value elsewhere in the module is the evidence that a value here may have been meant to pass through it.
    """
    used: set[str] = set()
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)] if tree is not None else []
    for node in calls:
        named = isinstance(node.func, ast.Name) and node.func.id in functions
        if named and len(node.args) == 1 and not node.keywords and not isinstance(node.args[0], ast.Starred):
            used.add(node.func.id)  # type: ignore[attr-defined]
    return tuple(sorted(n for n in used if not functions[n].is_class and functions[n].accepts(1, [])))
