"""The classic agent (no model): reproduce, localize, search fix templates, validate."""

from agents.repair.classic.agent import ClassicAgent

__all__ = [
    "ClassicAgent",
]
