"""The model-driven repair agent: a small ReAct loop and its sandboxed tools."""

from agents.repair.llm.agent import LlmAgent
from agents.repair.llm.loop import ELIDED_CHARS, AgentConfig, RepairAgent, load_prompt
from agents.repair.llm.tools import Toolbox

__all__ = [
    "ELIDED_CHARS",
    "AgentConfig",
    "LlmAgent",
    "RepairAgent",
    "Toolbox",
    "load_prompt",
]
