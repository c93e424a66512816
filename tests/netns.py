"""Separate network namespaces for the multi-machine soak: each "machine" reaches the host only over a veth pair.

Root and iproute2 are needed; `available()` says why not otherwise, and the soak then runs its machines as plain
processes (still with separate data dirs, still over TCP).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from dataclasses import dataclass


def available() -> str | None:
    """None when namespaces can be made here, else the reason they cannot."""
    if os.geteuid() != 0:
        return "not root"
    if shutil.which("ip") is None:
        return "no ip (iproute2)"
    probe = f"rb-probe-{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"ip netns add failed: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@dataclass
class Machine:
    """One namespace: `host_ip` is the host's end of its veth (what the machine dials), `argv()` runs inside."""

    name: str
    host_ip: str
    own_ip: str
    host_if: str

    def argv(self, command: list[str]) -> list[str]:
        """`command` run inside this machine's namespace."""
        return ["ip", "netns", "exec", self.name, *command]


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def create(index: int) -> Machine:
    """A namespace with loopback up and a /30 veth link to the host (10.231.<index>.1 host, .2 machine)."""
    tag = uuid.uuid4().hex[:6]
    name, host_if, own_if = f"rb-{tag}-{index}", f"rbh{tag}{index}", f"rbn{tag}{index}"
    host_ip, own_ip = f"10.231.{index}.1", f"10.231.{index}.2"
    _ip("netns", "add", name)
    _ip("link", "add", host_if, "type", "veth", "peer", "name", own_if)
    _ip("link", "set", own_if, "netns", name)
    _ip("addr", "add", f"{host_ip}/30", "dev", host_if)
    _ip("link", "set", host_if, "up")
    _ip("netns", "exec", name, "ip", "addr", "add", f"{own_ip}/30", "dev", own_if)
    _ip("netns", "exec", name, "ip", "link", "set", own_if, "up")
    _ip("netns", "exec", name, "ip", "link", "set", "lo", "up")
    return Machine(name, host_ip, own_ip, host_if)


def destroy(machine: Machine) -> None:
    """Remove the namespace and the host end of its veth (the peer goes with the namespace)."""
    subprocess.run(["ip", "link", "del", machine.host_if], capture_output=True)
    subprocess.run(["ip", "netns", "del", machine.name], capture_output=True)
