"""Removes what sandboxes of dead bot processes left behind: docker containers and workspace quota mounts.

A worker killed with SIGKILL cannot close its sandboxes. Containers carry their owner's host, pid and
start time as labels (sandboxes/docker.py), quota mounts carry them in their folder's name
(sandboxes/quota.py); whatever belongs to a process of this host that no longer runs is removed. Workers
run reap_periodically() for as long as they run, so nothing outlives its worker by more than one interval.
"""

from __future__ import annotations

import asyncio
import logging

from sandboxes.quota import reap_stale_quota_mounts

log = logging.getLogger(__name__)


def _reap_containers() -> int:
    """reap_leftovers() when a Docker engine is reachable; 0 (logged at debug level) when there is none."""
    try:
        import docker.errors
        import requests
    except ImportError:
        return 0
    from sandboxes.docker import reap_leftovers

    try:
        return reap_leftovers()
    except (docker.errors.DockerException, requests.RequestException, OSError) as exc:
        log.debug("no docker sandboxes reaped: %s", exc)
        return 0


def reap_once() -> int:
    """Remove leftovers of dead processes once (blocking: docker API calls, umount); returns how many."""
    return _reap_containers() + reap_stale_quota_mounts()


async def reap_periodically(interval: float) -> None:
    """Reap now, then every `interval` seconds, until cancelled; a failed round is logged, never raised."""
    while True:
        try:
            removed = await asyncio.to_thread(reap_once)
        except OSError as exc:  # umount or /proc trouble: try again next round
            log.warning("reaping sandbox leftovers failed: %s", exc)
        else:
            if removed:
                log.info("reaped %d sandbox leftovers of dead workers", removed)
        await asyncio.sleep(interval)
