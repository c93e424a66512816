"""App auth against the double: JWT → installation token, cached until shortly before it expires."""

from __future__ import annotations

from pathlib import Path

import aiohttp

from bot.config import Settings
from bot.github_client import REFRESH_MARGIN, InstallationTokens
from tests.gh_env import INSTALLATION, GitHubEnv


async def test_token_is_minted_once_and_refreshed_near_expiry(tmp_path: Path, settings: Settings) -> None:
    async with GitHubEnv(tmp_path, settings) as env:
        env.double.installations[INSTALLATION] = []
        now = [0.0]
        tokens = InstallationTokens(env.settings, clock=lambda: now[0])
        async with aiohttp.ClientSession() as session:
            first = await tokens.token(session, INSTALLATION)
            now[0] = 1.0
            assert await tokens.token(session, INSTALLATION) == first
            expires = tokens._cache[INSTALLATION][1]
            now[0] = expires - REFRESH_MARGIN + 1
            assert await tokens.token(session, INSTALLATION) != first
        minted = [c for c in env.double.calls if c[0] == "apps/create-installation-access-token"]
        assert len(minted) == 2 and env.double.violations == []


async def test_a_wrong_app_key_is_refused(tmp_path: Path, settings: Settings) -> None:
    from dataclasses import replace

    import pytest
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from gidgethub import BadRequest

    async with GitHubEnv(tmp_path, settings) as env:
        env.double.installations[INSTALLATION] = []
        other = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        tokens = InstallationTokens(replace(env.settings, github_private_key=other.decode()))
        async with aiohttp.ClientSession() as session:
            with pytest.raises(BadRequest):
                await tokens.token(session, INSTALLATION)
