"""Client-side agents that run on a self-hosted runner: the app reproduction agent (BugRepro) and its drivers.

Nothing here imports `bot` or `handlers`; a model, when there is one, comes in as a `complete(messages)` callable.
"""
