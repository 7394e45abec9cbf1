"""Which agent a command talks to: a command line given with ``--agent``, or the built-in one.

The built-in accord coding agent runs in this process, connected through the in-memory
transport, so ``accord run "PROMPT"`` needs no second program and behaves exactly as with an
external agent. Building it imports the heavy parts (pydantic-ai), so that happens here, lazily.
"""

from __future__ import annotations

import argparse
import shlex

import anyio

from ..client import AgentSpec

__all__ = ("agent_spec", "close_builtin_agent", "describe_agent")


def agent_spec(args: argparse.Namespace) -> AgentSpec:
    """The agent to connect to for these arguments.

    Raises:
        ValueError: ``--agent`` is empty or cannot be split into words.
    """
    if args.agent is not None:  # "" is a mistake to report, not a request for the built-in agent
        try:
            words = shlex.split(args.agent)
        except ValueError as error:
            raise ValueError(
                f"--agent {args.agent!r} is not a valid command line: {error}"
            ) from None
        if not words:
            raise ValueError("--agent is empty: give the agent's command line")
        return words
    from ._serve import build_agent

    return build_agent(
        model=getattr(args, "model", None),
        base_url=getattr(args, "base_url", None),
        store=getattr(args, "store", None),
    )


def describe_agent(args: argparse.Namespace) -> str:
    """A short name of the agent for error messages."""
    return repr(args.agent) if args.agent is not None else "the built-in accord agent"


async def close_builtin_agent(spec: AgentSpec) -> None:
    """Close the built-in agent's sessions and store (``connect`` only serves it)."""
    from ..agent import AgentRuntime

    if isinstance(spec, AgentRuntime):
        with anyio.CancelScope(shield=True):
            await spec.aclose()
