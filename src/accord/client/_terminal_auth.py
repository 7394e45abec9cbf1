"""Terminal authentication: run an agent's ``type: "terminal"`` auth method for the user.

An agent may offer auth methods that the user completes in a terminal (a sign-in, a setup
wizard), but only to a client that advertised ``clientCapabilities.auth.terminal``: the client
can start the agent's command again, interactively. :func:`~accord.client.connect` advertises
it with ``terminal_auth=True`` (only for an agent given as a command line, since the method
can only extend that command). The method must not be passed to ``authenticate``; instead:

1. :func:`run_terminal_auth` starts the configured command with the method's ``args``
   appended and its ``env`` over the connection's, attached to this process's terminal
   (stdin, stdout and stderr inherited), and waits for it;
2. exit status 0 means success (:class:`TerminalAuthFailed` otherwise);
3. the caller connects again (a fresh ``initialize``), and the agent now works.

Above: programs such as ``accord run``. Below: the OS (a subprocess).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

import anyio

from ..errors import AcpError
from ..schema import AuthMethod, TerminalAuthMethod

__all__ = ("TerminalAuthFailed", "run_terminal_auth", "terminal_auth_methods")


class TerminalAuthFailed(AcpError):
    """The terminal auth method's process did not exit with status 0."""

    def __init__(self, method_id: str, exit_code: int | None) -> None:
        self.method_id = method_id
        self.exit_code = exit_code
        super().__init__(f"the terminal auth method {method_id!r} failed (exit status {exit_code})")


def terminal_auth_methods(methods: Sequence[AuthMethod]) -> list[TerminalAuthMethod]:
    """The terminal methods among an agent's ``authMethods``."""
    return [method for method in methods if isinstance(method, TerminalAuthMethod)]


async def run_terminal_auth(
    command: Sequence[str],
    method: TerminalAuthMethod,
    *,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> None:
    """Run ``method`` for the agent started by ``command``, in this terminal, and wait.

    ``env`` is the connection's environment over this process's; the method's own ``env``
    overrides both. Cancelling the caller terminates the process.

    Raises:
        TerminalAuthFailed: the process exited with another status than 0.
        FileNotFoundError: the agent's program does not exist.
    """
    if not command:
        raise ValueError("the agent's command line is empty")
    environment = {**os.environ, **(env or {}), **method.env}
    process = await anyio.open_process(
        [*command, *method.args], stdin=None, stdout=None, stderr=None, cwd=cwd, env=environment
    )
    try:
        code = await process.wait()
    finally:
        if process.returncode is None:
            with anyio.CancelScope(shield=True):
                process.terminate()
                with anyio.move_on_after(5):
                    await process.wait()
                if process.returncode is None:
                    process.kill()
                    await process.wait()
    if code != 0:
        raise TerminalAuthFailed(method.id, code)
