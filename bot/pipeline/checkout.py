"""The checkout stage: clone the repo at the base commit into the job's folder."""

from __future__ import annotations

from bot.pipeline.state import JobState
from sandboxes.workspace import SCRATCH_DIR, clone_workspace


async def run(state: JobState) -> None:
    """Clone the request's repo at its base commit into `state.base`, with the sandbox's scratch folder."""
    request = state.request
    await state.ctx.stage("checkout", str(request.repo))
    await clone_workspace(request.repo, state.base, request.base_commit)
    (state.base / SCRATCH_DIR).mkdir(exist_ok=True)
