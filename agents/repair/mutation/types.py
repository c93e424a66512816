"""The types the mutation modules share: module facts, a target statement, its scope, an edit, an operator's view."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from agents.repair.mutation.signatures import Signature

#: Comprehension nodes: each binds its own names.
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


@dataclass(frozen=True)
class MutationContext:
    """Module-level facts computed once per file by `build_context`."""

    data_attributes: tuple[str, ...] = ()  # attribute names not used as calls, most frequent first
    method_names: tuple[str, ...] = ()  # attribute names that are called, most frequent first
    callables: frozenset[str] = frozenset()  # module-level defs, classes and imported names
    module_variables: tuple[str, ...] = ()  # module-level assigned names that are not callables
    attrs_by_base: tuple[tuple[str, tuple[str, ...]], ...] = ()  # base name -> attributes used on it
    signatures: Mapping[str, Signature] = field(default_factory=dict, compare=False)  # module defs and classes
    helpers: tuple[str, ...] = ()  # module functions the module applies to one value (`applied_helpers`)
    raises: tuple[str, ...] = ()  # exceptions the test expects the call to raise (set by the search, not the file)
    source: str = field(default="", repr=False, compare=False)
    tree: ast.Module | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True, eq=False)
class Target:
    """The innermost statement at a line: a simple statement, or a compound statement's header."""

    stmt: ast.stmt
    header: tuple[ast.expr, ...] | None  # None for a simple statement
    block: list[ast.stmt]  # the statement list that holds stmt
    index: int
    functions: tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...]  # enclosing defs, innermost first
    loops: tuple[ast.stmt, ...]  # enclosing loops inside the innermost def, innermost first

    @property
    def roots(self) -> tuple[ast.AST, ...]:
        """The nodes whose source spans an operator may rewrite."""
        return self.header if self.header is not None else (self.stmt,)


@dataclass(frozen=True)
class Scope:
    """Replacement names visible at a target, nearest use first."""

    variables: tuple[str, ...]  # params and locals of the enclosing defs, then module variables
    assigned: frozenset[str]  # names the innermost def (or module) assigns, params included
    callables: frozenset[str]
    params: frozenset[str] = frozenset()  # parameters of the innermost def
    kinds: Mapping[str, str] = field(default_factory=dict)  # variable -> "num" | "seq" | "obj"

    def kind(self, name: str) -> str | None:
        """The guessed kind of a variable, if the evidence agrees."""
        return self.kinds.get(name)

    def compatible(self, a: str, b: str) -> bool:
        """False only when both kinds are known and differ."""
        ka, kb = self.kind(a), self.kind(b)
        return ka is None or kb is None or ka == kb


def comprehension_bound(node: ast.AST) -> set[str]:
    """Names bound by the generators of a comprehension node."""
    names: set[str] = set()
    if isinstance(node, COMPREHENSIONS):
        for gen in node.generators:
            names.update(n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name))
    return names


@dataclass(frozen=True, eq=False)
class Edit:
    """One mutant before rendering: replace `node` by `new` inside `root`, or a statement insert/delete."""

    operator: str
    tier: int
    root: ast.AST  # statement or header expression whose source span contains the change
    node: ast.AST  # node replaced (mode "replace") or anchor statement
    new: ast.AST | None = None
    # replace | insert_before | insert_after | delete | merge_next (`node` and the statement `root` after it
    # become `new`)
    mode: str = "replace"


@dataclass(frozen=True, eq=False)
class Env:
    """Everything an operator needs about one target statement."""

    target: Target
    scope: Scope
    ctx: MutationContext
    nodes: tuple[tuple[ast.AST, ast.AST], ...]  # (node, root) for every node under the roots, pre-order
    parents: dict[int, ast.AST]

    def parent(self, node: ast.AST) -> ast.AST | None:
        """The node's parent below the roots (None for a root)."""
        return self.parents.get(id(node))

    def of_type(self, *types: type[ast.AST]) -> Iterator[tuple[ast.AST, ast.AST]]:
        """(node, root) pairs of the given node types."""
        return ((n, r) for n, r in self.nodes if isinstance(n, types))

    def is_called(self, node: ast.AST) -> bool:
        """Whether node is the function part of a call."""
        parent = self.parent(node)
        return isinstance(parent, ast.Call) and parent.func is node

    def comp_names(self, node: ast.AST) -> list[str]:
        """Names bound by comprehensions that enclose node (innermost first)."""
        names: list[str] = []
        current = self.parent(node)
        while current is not None:
            names += sorted(comprehension_bound(current) - set(names))
            current = self.parent(current)
        return names


def make_env(target: Target, scope: Scope, ctx: MutationContext) -> Env:
    """Index the nodes under the target's roots with their parents."""
    nodes: list[tuple[ast.AST, ast.AST]] = []
    parents: dict[int, ast.AST] = {}
    for root in target.roots:
        stack: list[ast.AST] = [root]
        while stack:
            node = stack.pop()
            nodes.append((node, root))
            children = list(ast.iter_child_nodes(node))
            for child in children:
                parents[id(child)] = node
            stack.extend(reversed(children))
    return Env(target, scope, ctx, tuple(nodes), parents)
