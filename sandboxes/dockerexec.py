"""Docker exec plumbing without asyncio: the multiplexed attach stream, capped, with stdin fed alongside."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from pathlib import Path

from sandboxes.process import CappedBuffer

_HEADER = struct.Struct(">BxxxL")
_CHUNK = 1 << 16


def raw_socket(attached: object) -> socket.socket:
    """The plain socket under what APIClient.exec_start(socket=True) returns."""
    sock = getattr(attached, "_sock", attached)
    if not isinstance(sock, socket.socket):  # pragma: no cover - other transports (ssh, npipe)
        raise TypeError(f"unsupported docker attach transport {type(attached).__name__}")
    return sock


def _feed(sock: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):
        view = memoryview(data)
        while view:
            sent = sock.send(view[:_CHUNK])
            view = view[sent:]
    # Half-close: the command sees end of input, the output side stays open.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_WR)


def pump(sock: socket.socket, stdin: bytes | None, out: CappedBuffer, err: CappedBuffer) -> None:
    """Read docker's framed stdout/stderr stream into capped buffers until it ends (blocking).

    Frames are an 8-byte header (stream id, 3 pad bytes, big-endian length) and a payload. Input is
    written by a second thread, so a command that never reads its stdin cannot block the output side.
    """
    sock.settimeout(None)  # the wall timeout is enforced by the caller, which kills and closes
    writer = None
    if stdin:
        writer = threading.Thread(target=_feed, args=(sock, stdin), daemon=True)
        writer.start()
    else:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_WR)
    pending = bytearray()
    buf = bytearray(_CHUNK * 4)
    view = memoryview(buf)
    try:
        while True:
            try:
                n = sock.recv_into(view)
            except OSError:
                break
            if n == 0:
                break
            pending += view[:n]
            pos = 0
            while len(pending) - pos >= _HEADER.size:
                kind, size = _HEADER.unpack_from(pending, pos)
                if len(pending) - pos - _HEADER.size < size:
                    break
                start = pos + _HEADER.size
                (err if kind == 2 else out).feed(bytes(pending[start : start + size]))
                pos = start + size
            del pending[:pos]
    finally:
        if writer is not None:
            writer.join(timeout=5)


def cgroup_file(container_id: str, controller: str, name: str) -> Path | None:
    """A cgroup file of a container (cgroup v1 cgroupfs/systemd drivers or v2), if this host shows it."""
    candidates = [
        Path("/sys/fs/cgroup") / controller / "docker" / container_id / name,
        Path("/sys/fs/cgroup") / controller / "system.slice" / f"docker-{container_id}.scope" / name,
        Path("/sys/fs/cgroup/system.slice") / f"docker-{container_id}.scope" / name,
        Path("/sys/fs/cgroup/docker") / container_id / name,
    ]
    for path in candidates:
        if path.is_file():
            return path
    return None


def read_counter(path: Path | None, key: str | None = None) -> int | None:
    """An integer from a cgroup file: the whole file, or the `key N` line of a keyed file."""
    if path is None:
        return None
    try:
        text = path.read_text()
    except OSError:
        return None
    if key is None:
        return int(text.split()[0]) if text.split() and text.split()[0].isdigit() else None
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return None
