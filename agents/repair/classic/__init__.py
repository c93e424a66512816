"""The classic agent (no model): reproduce, localize, search fix templates, validate."""
