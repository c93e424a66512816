"""Repair agents: classic (search over fix templates), mutation (the templates), llm (a ReAct loop)."""
