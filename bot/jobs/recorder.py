"""The store's record of what a job published, and what a forge job needs besides its forge."""

from __future__ import annotations

import asyncio
import hashlib
from dataclasses import dataclass

from bot.forges.base import Forge
from bot.settings.config import Settings
from bot.store import Store

__all__ = ["JobDeps", "Recorder"]


@dataclass
class JobDeps:
    """What a forge job needs besides its forge: the settings and the store."""

    settings: Settings
    store: Store


@dataclass(frozen=True)
class Recorder:
    """The store's record of what one job published on one issue; every call runs off the event loop."""

    store: Store
    issue_id: int
    job_id: int | None

    async def status(self, forge: Forge, kind: str, body: str) -> str:
        """Post or edit the status comment of `kind`; an unchanged body is not sent again."""
        key = f"status-{kind}"
        digest = hashlib.sha256(body.encode()).hexdigest()
        known = await asyncio.to_thread(self.store.publications.get_publication, self.issue_id, key)
        if known is not None and known.body_hash == digest:
            return known.forge_ref
        ref = await forge.upsert_status(kind, body, known.forge_ref if known else None)
        await self.record(key, ref, body_hash=digest)
        return ref

    async def record(self, kind: str, ref: str, *, body_hash: str | None = None) -> None:
        """Record a publication once the forge has it."""
        await asyncio.to_thread(
            self.store.publications.upsert_publication,
            self.issue_id,
            kind,
            ref,
            body_hash=body_hash,
            job_id=self.job_id,
        )
