"""Which agent a command talks to: ``--agent`` (a name or a command line), or the built-in one.

``--agent`` takes a friendly name (``claude``, ``codex``, ``gemini``, ... or one from the
config file's ``[agents]``: see :mod:`._settings`) or a command line (split as a shell would,
never run through one). Without ``--agent`` the config file's ``agent`` is used, and without
that the built-in accord coding agent, which runs in this process, connected through the
in-memory transport, so ``accord run "PROMPT"`` needs no second program and behaves exactly
as with an external agent. Building it imports the heavy parts (pydantic-ai), so that happens
here, lazily.
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import anyio

from ..client import AgentSpec
from ._exit_codes import ExitCode
from ._report import CODER_EXTRA_MISSING, coder_extra_missing, report
from ._settings import Settings, SettingsError, load

__all__ = (
    "AgentChoice",
    "AgentSpecError",
    "agent_spec",
    "builtin_environ",
    "builtin_model",
    "choose_agent",
    "close_builtin_agent",
    "describe_agent",
)


class AgentSpecError(ValueError):
    """The agent cannot be used as given (the message says why and what to do)."""


@dataclass(frozen=True, slots=True)
class AgentChoice:
    """The agent a command will talk to.

    Attributes:
        command: its command line, or None for the built-in agent (or a served one).
        name: how messages call it (``'claude' (npx ...)``, or ``the built-in accord agent``).
        url: the URL of a served agent (``ws://host:8765/acp``), or None.
    """

    command: list[str] | None
    name: str
    url: str | None = None

    @property
    def builtin(self) -> bool:
        """Whether this is the built-in accord agent."""
        return self.command is None and self.url is None


def choose_agent(value: str | None, settings: Settings) -> AgentChoice:
    """Resolve ``--agent`` (or the config file's ``agent``) to a command line.

    Raises:
        AgentSpecError: empty, unparsable, or a single word that is neither a known name nor
            a program on ``PATH``.
    """
    if value is None:
        value = settings.agent
    if value is None:
        return AgentChoice(None, "the built-in accord agent")
    from ..remote import is_remote_url

    if is_remote_url(value):
        return AgentChoice(None, repr(value), value)
    names = settings.agent_names()
    if value in names:
        command = names[value]
        try:
            return AgentChoice(shlex.split(command), f"{value!r} ({command})")
        except ValueError as error:
            raise AgentSpecError(
                f"the agent {value!r} has an invalid command line {command!r}: {error}"
            ) from None
    try:
        words = shlex.split(value)
    except ValueError as error:
        raise AgentSpecError(f"--agent {value!r} is not a valid command line: {error}") from None
    if not words:
        raise AgentSpecError("--agent is empty: give an agent name or its command line")
    if len(words) == 1 and os.sep not in value and shutil.which(value) is None:
        known = ", ".join(sorted(names))
        raise AgentSpecError(
            f"unknown agent {value!r}: not a known name ({known}) nor a program on PATH; "
            "give its command line, or name it in the config file's [agents]"
        )
    return AgentChoice(words, repr(value))


def builtin_environ(settings: Settings) -> dict[str, str]:
    """This process's environment, with the config file's model, URL and context window as
    fallbacks."""
    from ..coder import BASE_URL_ENV, CONTEXT_WINDOW_ENV, MODEL_ENV

    environ = dict(os.environ)
    if settings.model and not environ.get(MODEL_ENV):
        environ[MODEL_ENV] = settings.model
    if settings.base_url and not environ.get(BASE_URL_ENV):
        environ[BASE_URL_ENV] = settings.base_url
    if settings.context_window and not environ.get(CONTEXT_WINDOW_ENV, "").strip():
        environ[CONTEXT_WINDOW_ENV] = str(settings.context_window)
    return environ


def agent_spec(
    choice: AgentChoice, args: argparse.Namespace, settings: Settings, *, needs_model: bool
) -> AgentSpec:
    """The agent to connect to.

    ``needs_model``: the command will prompt, so the built-in agent must have a model and
    its dependencies (otherwise a clear :class:`AgentSpecError` now, not a failed turn later).

    Raises:
        AgentSpecError: the built-in agent cannot serve this command (the message says why).
        ValueError: the environment's configuration is invalid (e.g. a bad context window).
    """
    if choice.command is not None:
        return choice.command
    if choice.url is not None:
        return choice.url
    from ..coder import CoderConfig
    from ._build_agent import build_agent

    model = getattr(args, "model", None)
    base_url = getattr(args, "base_url", None)
    window = getattr(args, "context_window", None)
    environ = builtin_environ(settings)
    if needs_model:
        if coder_extra_missing():
            raise AgentSpecError(f"{CODER_EXTRA_MISSING} (or use another agent: --agent)")
        config = CoderConfig.from_sources(
            model=model, base_url=base_url, context_window=window, environ=environ
        )
        if not config.configured:
            raise AgentSpecError(
                "no model is configured for the built-in agent: give --model (e.g. "
                "--model openai:gpt-5 with OPENAI_API_KEY set), set ACCORD_MODEL, or put "
                'model = "..." in the config file; or use another agent with --agent'
            )
    return build_agent(
        model=model,
        base_url=base_url,
        context_window=window,
        store=getattr(args, "store", None),
        environ=environ,
        warn=False,
    )


def builtin_model(args: argparse.Namespace, settings: Settings) -> tuple[str | None, str | None]:
    """The built-in agent's model and base URL, as it will use them (for error messages)."""
    environ = builtin_environ(settings)
    model = getattr(args, "model", None) or environ.get("ACCORD_MODEL") or None
    base_url = getattr(args, "base_url", None) or environ.get("ACCORD_BASE_URL") or None
    return model, base_url


def describe_agent(args: argparse.Namespace) -> str:
    """A short name of ``--agent`` for messages (before it is resolved)."""
    return repr(args.agent) if args.agent is not None else "the built-in accord agent"


async def close_builtin_agent(spec: AgentSpec) -> None:
    """Close the built-in agent's sessions and store (``connect`` only serves it)."""
    from ..agent import AgentRuntime

    if isinstance(spec, AgentRuntime):
        with anyio.CancelScope(shield=True):
            await spec.aclose()


def run_with_agent(
    body: Callable[..., Awaitable[int]], args: argparse.Namespace, *extra: object
) -> int:
    """Run a command's ``body(args, settings, choice, *extra)`` against the agent ``args.agent``.

    Loads the settings and chooses the agent first: a bad settings file or agent name is
    reported and answers :attr:`ExitCode.ERROR`; Ctrl-C answers :attr:`ExitCode.CANCELLED`.
    Otherwise the body's exit code.
    """
    try:
        settings = load()
        choice = choose_agent(args.agent, settings)
    except (SettingsError, AgentSpecError) as error:
        report(str(error))
        return ExitCode.ERROR
    try:
        return anyio.run(body, args, settings, choice, *extra, backend="asyncio")
    except KeyboardInterrupt:
        print("\naccord: interrupted", file=sys.stderr)
        return ExitCode.CANCELLED
