"""The model-driven repair agent: a small ReAct loop and its sandboxed tools."""
