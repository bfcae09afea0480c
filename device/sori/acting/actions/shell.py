"""Allow-listed commands: run a program (never a shell) with the command's values.

Config maps an entity id, a domain, or "*" to an argument list; the program (first
argument) must be an absolute path in `shell.allow`. Placeholders in arguments:
{intent} {entity_id} {domain} {object_id} {state} ("on"/"off") {payload} (JSON).

Deadline: the program runs in its own process group (a new session). It is done when it
has exited and closed its output, children included. At the command's deadline (the
earlier of `Command.deadline_ns` and `shell.timeout_s` from the start) the whole group is
killed with SIGKILL and the handler returns, even if some child escaped the group and
still holds the output: it never waits on an orphan's pipe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Mapping, Sequence

from sori.acting.actions.base import Command, Result
from sori.core.errors import BackendError, ConfigError

log = logging.getLogger(__name__)

REAP_S = 1.0
"""After killing the group, how long to wait for its output to close, in seconds."""


def check_commands(commands: Mapping[str, Sequence[str]], allow: Sequence[str]) -> None:
    """ConfigError naming the key when a command is empty or its program not allowed."""
    for key, argv in commands.items():
        if not argv or not all(isinstance(a, str) for a in argv):
            raise ConfigError(f"shell.commands.{key} must be a non-empty list of strings")
        if argv[0] not in allow:
            raise ConfigError(
                f"shell.commands.{key}: {argv[0]!r} is not in shell.allow; add its absolute path"
            )
    for program in allow:
        if not program.startswith("/"):
            raise ConfigError(f"shell.allow: {program!r} must be an absolute path")


class ShellHandler:
    """Runs the configured program for each command, with a timeout."""

    name = "shell"
    enforces_deadline = True
    """It stops at `Command.deadline_ns` itself and reports how (see the registry)."""

    def __init__(
        self,
        commands: Mapping[str, Sequence[str]],
        allow: Sequence[str],
        timeout_s: float = 5.0,
    ) -> None:
        check_commands(commands, allow)
        self.commands = {k: list(v) for k, v in commands.items()}
        self.allow = frozenset(allow)
        self.timeout_s = timeout_s

    def argv_for(self, command: Command) -> list[str]:
        template = next(
            (
                self.commands[k]
                for k in (command.entity_id, command.domain, "*")
                if k in self.commands
            ),
            None,
        )
        if template is None:
            raise BackendError(f"no shell command for {command.entity_id or command.intent}")
        state = {"HassTurnOn": "on", "HassTurnOff": "off"}.get(command.intent, "")
        values = {
            "intent": command.intent,
            "entity_id": command.entity_id,
            "domain": command.domain,
            "object_id": command.object_id,
            "state": state,
            "payload": command.payload_json(),
        }
        return [template[0], *(arg.format_map(values) for arg in template[1:])]

    async def handle(self, command: Command) -> Result:
        argv = self.argv_for(command)
        if argv[0] not in self.allow:  # checked at start too; never run anything else
            raise BackendError(f"{argv[0]} is not allow-listed")
        limit_s = min(command.remaining_s(self.timeout_s), self.timeout_s)
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group, killed as one
        )
        try:
            out, err = await asyncio.wait_for(proc.communicate(), limit_s)
        except TimeoutError:
            await self._kill_group(proc)
            why = "still ran" if proc.returncode is None or proc.returncode < 0 else "exited"
            raise TimeoutError(
                f"{argv[0]} {why} at the deadline ({limit_s:.3g} s) with its output still open; "
                "its process group was killed"
            ) from None
        except asyncio.CancelledError:
            await self._kill_group(proc)
            raise
        if proc.returncode != 0:
            tail = err.decode("utf-8", "replace").strip()[-200:]
            raise BackendError(f"{argv[0]} exited {proc.returncode}: {tail}")
        return Result(detail=" ".join(argv))

    @staticmethod
    async def _kill_group(proc: asyncio.subprocess.Process) -> None:
        """SIGKILL the program's process group; wait briefly for its output to close, never
        for a child that left the group and keeps the pipe open."""
        with contextlib.suppress(ProcessLookupError):  # the whole group is gone already
            os.killpg(proc.pid, signal.SIGKILL)  # the group id is the leader's pid

        async def drained() -> None:  # the pipes' ends, then the exit status
            await asyncio.gather(proc.stdout.read(), proc.stderr.read())
            await proc.wait()

        try:
            await asyncio.wait_for(drained(), REAP_S)
        except TimeoutError:
            log.warning(
                "pid %d: a child left its process group and still holds its output", proc.pid
            )
            # Drop our ends of the pipes so the transport finishes now; asyncio has no
            # public call for that on a Process.
            proc._transport.close()  # noqa: SLF001

    async def close(self) -> None:
        return None
