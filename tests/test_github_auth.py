"""App auth against the double: JWT → installation token, cached until shortly before it expires."""

from __future__ import annotations

from pathlib import Path

import aiohttp
import pytest

from bot.forges.github_client import REFRESH_MARGIN, InstallationTokens
from bot.settings.config import Settings
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


async def test_git_over_https_keeps_the_token_out_of_git_config(tmp_path: Path, settings: Settings) -> None:
    from bot.forges.github import GitHubForge
    from bot.forges.github_client import client
    from sandboxes.workspace import GitError, git, head_commit

    async with GitHubEnv(tmp_path, settings) as env:
        src = tmp_path / "seed"
        src.mkdir()
        (src / "m.py").write_text("X = 1\n")
        env.double.add_repo("octo/app", src, installation_id=INSTALLATION)
        async with aiohttp.ClientSession() as session:
            token = await InstallationTokens(env.settings).token(session, INSTALLATION)
            forge = GitHubForge(
                client(session, env.settings, token), "octo/app", 1, token=token, git_url=env.double.git_url
            )
            ws = await forge.clone(tmp_path / "ws", "main")
            base = await head_commit(ws)
            diff = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-X = 1\n+X = 2\n"
            await forge.push_branch(ws, branch="reprobot/issue-1", base_commit=base, diff=diff, message="fix")
            # Without the token, the double's git endpoint refuses the same clone.
            bare = GitHubForge(forge.gh, "octo/app", 1, token="wrong", git_url=env.double.git_url)
            with pytest.raises(GitError, match="failed"):
                await bare.clone(tmp_path / "ws2", "main")
        assert env.double.branch_file("octo/app", "reprobot/issue-1", "m.py") == "X = 2\n"
        config = (ws / ".git" / "config").read_text()
        assert token not in config and "x-access-token" not in config
        remote = (await git(ws, "remote", "get-url", "origin")).stdout.strip()
        assert remote == f"{env.double.git_url}/octo/app.git"
        for path in ws.rglob("*"):
            if path.is_file():
                assert token.encode() not in path.read_bytes(), path
