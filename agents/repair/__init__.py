"""Repair agents: classic (search over fix templates), mutation (the templates), llm (a ReAct loop).

`registry` names the agents a job may ask for, behind one `Agent` protocol; `task` is what each is given.
"""
