"""The setup agent (ExecutionAgent): how to install and test a repo, proposed by a model, run in a sandbox."""

from agents.setup.llm import LlmSetupAgent, SetupAgentConfig
from agents.setup.shell import SetupShell

__all__ = [
    "LlmSetupAgent",
    "SetupAgentConfig",
    "SetupShell",
]
