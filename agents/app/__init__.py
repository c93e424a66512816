"""Client-side agents that run on a self-hosted runner: the app reproduction agent (BugRepro) and its drivers.

Nothing here imports `bot` or `handlers`; a model, when there is one, comes in as a `complete(messages)` callable.
"""

from agents.app.driver import DriverError
from agents.app.oracle import OracleSpec, Verdict, judge_text, oracle_spec
from agents.app.reproduce import AppReproResult, replay_actions, replay_command, reproduce_app
from agents.app.s2r import Complete, clauses, split_report
from agents.app.web import WebDriver, shared_browser
from agents.app.webcases import extraction_score, load_web_cases, render_web_report, run_web_eval, serve_app

__all__ = [
    "AppReproResult",
    "Complete",
    "DriverError",
    "OracleSpec",
    "Verdict",
    "WebDriver",
    "clauses",
    "extraction_score",
    "judge_text",
    "load_web_cases",
    "oracle_spec",
    "render_web_report",
    "replay_actions",
    "replay_command",
    "reproduce_app",
    "run_web_eval",
    "serve_app",
    "shared_browser",
    "split_report",
]
