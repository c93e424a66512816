"""Fix templates: AST mutants of one suspicious line, spliced back with minimal textual change."""

from agents.repair.mutation.protocols import missing_protocols, special_method_candidates
from agents.repair.mutation.scope import build_context
from agents.repair.mutation.templates import Candidate, generate_candidates
from agents.repair.mutation.types import MutationContext

__all__ = [
    "Candidate",
    "MutationContext",
    "build_context",
    "generate_candidates",
    "missing_protocols",
    "special_method_candidates",
]
