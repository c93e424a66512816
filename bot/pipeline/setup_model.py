"""The model-backed setup agent for a job or a CLI run, when a model is configured (None otherwise)."""

from __future__ import annotations

import uuid
from pathlib import Path

from agents.chat import ChatModel
from agents.setup import LlmSetupAgent, SetupAgentConfig, SetupShell
from bot.llm import Ledger, client_from_settings, ledger_from_settings
from bot.settings.config import Settings


def setup_agent_for(
    settings: Settings,
    backend: str,
    *,
    model: ChatModel | None = None,
    ledger: Ledger | None = None,
) -> LlmSetupAgent | None:
    """A setup agent running its commands in `backend` sandboxes, charged to `ledger` (a fresh one if None).

    Uses `model` when given (the job's client); otherwise builds one from the settings, or returns None when
    no model is configured.
    """
    if model is None:
        if not settings.llm_configured:
            return None
        model = client_from_settings(settings, ledger if ledger is not None else ledger_from_settings(settings))
    name = f"setup-{uuid.uuid4().hex[:8]}"
    config = SetupAgentConfig(trajectory=name, save_to=settings.data_dir / "trajectories" / f"{name}.json")

    def shell_for(workspace: Path) -> SetupShell:
        return SetupShell(
            workspace=workspace,
            cache_dir=settings.cache_dir,
            python=settings.sandbox_python,
            backend=backend,
            index_url=settings.pip_index_url,
            rootfs=settings.rootfs,
            disk_bytes=settings.sandbox_disk_quota,
        )

    return LlmSetupAgent(model, shell_for, config)
