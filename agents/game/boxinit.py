"""The game sandbox's supervisor: it runs INSIDE the sandbox (`python3 -I -S -c`), with the standard library only.

It is the first process of the sandbox and starts the game's programs there (minetestserver, the client), so
they share the sandbox's network namespace, which holds nothing but loopback. The one way out is the probe's
command channel: a TCP port on 127.0.0.1 inside, forwarded to a Unix socket of the driver's bound in read-only.

Protocol, one JSON object a line. In (stdin): {"start": NAME, "argv": [...], "env": {...}, "cwd": DIR} starts or
restarts the program NAME. Out (stdout): {"ready": true} once the channel listens, {"started": NAME, "pid": N},
{"exit": NAME, "code": N}. End of stdin: every program is stopped (TERM, then KILL), then the supervisor exits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys

#: Seconds a program gets between SIGTERM and SIGKILL when the supervisor stops.
STOP_SECONDS = 10.0


def say(**message: object) -> None:
    """One line to the driver."""
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass  # the other side went away: the connection ends
    finally:
        writer.close()


async def _forward(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, socket_path: str) -> None:
    """One TCP connection of the probe, spliced onto a connection to the driver's Unix socket."""
    try:
        up_reader, up_writer = await asyncio.open_unix_connection(socket_path)
    except OSError:
        writer.close()
        return
    await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))


class Programs:
    """The programs started in the sandbox, by name."""

    def __init__(self) -> None:
        self.running: dict[str, asyncio.subprocess.Process] = {}
        self.watchers: set[asyncio.Task[None]] = set()

    async def start(self, name: str, argv: list[str], env: dict[str, str], cwd: str) -> None:
        """Start NAME, stopping the one running under that name first."""
        old = self.running.pop(name, None)
        if old is not None:
            await _end(old)
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                env=env,
                cwd=cwd,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.DEVNULL,
                start_new_session=True,
            )
        except OSError as exc:
            say(exit=name, code=127, error=str(exc))
            return
        self.running[name] = proc
        say(started=name, pid=proc.pid)
        task = asyncio.create_task(self._watch(name, proc))
        self.watchers.add(task)
        task.add_done_callback(self.watchers.discard)

    async def _watch(self, name: str, proc: asyncio.subprocess.Process) -> None:
        code = await proc.wait()
        say(exit=name, code=code, pid=proc.pid)

    async def stop(self) -> None:
        """Stop every program (all at once)."""
        await asyncio.gather(*(_end(proc) for proc in self.running.values()))
        self.running.clear()


async def _end(proc: asyncio.subprocess.Process) -> None:
    """TERM the program's group, KILL it if it has not ended within STOP_SECONDS."""
    for sig, wait in ((signal.SIGTERM, STOP_SECONDS), (signal.SIGKILL, STOP_SECONDS)):
        if proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), wait)


async def main() -> None:
    """Listen for the probe, say ready, then follow the driver's orders until its end of input."""
    config = json.loads(sys.argv[1])
    socket_path = str(config["socket"])
    server = await asyncio.start_server(lambda r, w: _forward(r, w, socket_path), "127.0.0.1", int(config["port"]))
    loop = asyncio.get_running_loop()
    orders = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(orders), sys.stdin)
    programs = Programs()
    say(ready=True)
    try:
        while line := await orders.readline():
            try:
                order = json.loads(line)
                await programs.start(str(order["start"]), list(order["argv"]), dict(order["env"]), str(order["cwd"]))
            except (ValueError, KeyError, TypeError) as exc:
                say(error=f"bad order: {exc}")
    finally:
        await programs.stop()
        server.close()


if __name__ == "__main__":
    asyncio.run(main())
