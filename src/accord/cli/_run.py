"""``accord run``: send one prompt to an agent and stream the reply to the terminal.

The reply is printed as it arrives: text inline, tool calls, diffs, plans and permission
questions as readable lines (``--json``: every raw ``session/update`` as one JSON line).
Permission requests are answered by ``--approve-all`` / ``--deny-all``, or asked on the
terminal when stdin is one (otherwise refused). Ctrl-C sends ``session/cancel`` and waits for
the agent to stop; a second Ctrl-C quits at once. The exit code says how it ended (see
:class:`~accord.cli._main.ExitCode`).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from typing import TextIO

import anyio
import orjson

from ..client import (
    AllowAll,
    AskCallback,
    Cancel,
    ClientSession,
    DenyAll,
    PermissionContext,
    PermissionDecision,
    PermissionPolicy,
    PermissionResolved,
    Select,
    TurnRenderer,
    TurnResult,
    UpdateListener,
    connect,
)
from ..errors import AcpError, LocalProtocolError, RequestError, TransportError
from ..schema import SessionNotification, StopReason
from ._agent_spec import agent_spec, describe_agent
from ._main import ExitCode

__all__ = ("exit_code_for", "run_command")


def run_command(args: argparse.Namespace) -> int:
    """Run ``accord run`` and return its exit code."""
    args.cwd = os.path.abspath(args.cwd or os.getcwd())
    return anyio.run(_run, args, backend="asyncio")


def exit_code_for(stop_reason: StopReason, *, permission_refused: bool) -> ExitCode:
    """The exit code of a finished turn."""
    if stop_reason == "cancelled":
        return ExitCode.CANCELLED
    if stop_reason == "refusal":
        return ExitCode.REFUSED
    return ExitCode.PERMISSION_REFUSED if permission_refused else ExitCode.OK


def _policy(args: argparse.Namespace) -> PermissionPolicy:
    if args.approve_all:
        return AllowAll()
    if args.deny_all:
        return DenyAll()
    if sys.stdin.isatty():
        return AskCallback(_ask_on_terminal)
    return _RefuseWithNotice()


class _RefuseWithNotice:
    """Refuse every request, saying once why (no terminal to ask on)."""

    def __init__(self) -> None:
        self._told = False
        self._deny = DenyAll()

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        if not self._told:
            self._told = True
            print(
                "accord: stdin is not a terminal, so permission requests are refused "
                "(use --approve-all to allow them)",
                file=sys.stderr,
            )
        return await self._deny.decide(context)


async def _ask_on_terminal(context: PermissionContext) -> PermissionDecision:
    """Ask the person at the terminal to pick one of the agent's options."""
    lines = [f"\nThe agent asks permission: {context.title or context.tool_call.tool_call_id}"]
    if context.kind != "other":
        lines[0] += f" ({context.kind})"
    for number, option in enumerate(context.options, 1):
        lines.append(f"  {number}. {option.name} [{option.kind}]")
    lines.append("Choose a number (Enter = refuse): ")
    answer = await anyio.to_thread.run_sync(_read_answer, "\n".join(lines), abandon_on_cancel=True)
    if answer.isdigit() and 1 <= int(answer) <= len(context.options):
        return Select(context.options[int(answer) - 1].option_id)
    refuse = context.option("reject_once", "reject_always")
    return Select(refuse.option_id) if refuse is not None else Cancel()


def _read_answer(question: str) -> str:
    sys.stderr.write(question)
    sys.stderr.flush()
    try:
        return input().strip()
    except EOFError:
        return ""


def _json_printer(out: TextIO) -> UpdateListener:
    def print_update(notification: SessionNotification) -> None:
        out.write(orjson.dumps(notification.to_wire()).decode() + "\n")
        out.flush()

    return print_update


async def _run(args: argparse.Namespace) -> int:
    cwd: str = args.cwd
    out = sys.stdout
    refused = False
    try:
        spec = agent_spec(args)
    except (ValueError, AcpError) as error:
        print(f"accord: {error}", file=sys.stderr)
        return ExitCode.ERROR
    listener = _json_printer(out) if args.json else None
    try:
        async with connect(
            spec,
            cwd=cwd,
            fs=True,
            terminals=True,
            permission_policy=_policy(args),
            update_listener=listener,
        ) as conn:
            if args.session:
                session = await conn.load_session(args.session, cwd)
            else:
                session = await conn.new_session(cwd)
            renderer = TurnRenderer()
            written = ""
            result: TurnResult | None = None
            async with anyio.create_task_group() as task_group:
                task_group.start_soon(_cancel_on_interrupt, session, task_group.cancel_scope)
                async with session.stream(args.prompt) as stream:
                    async for event in stream:
                        if isinstance(event, PermissionResolved) and _is_refusal(event):
                            refused = True
                        if not args.json:
                            text = renderer.render(event)
                            if text:
                                out.write(text)
                                out.flush()
                                written = text
                    result = stream.result
                task_group.cancel_scope.cancel()
            if result is None:  # a second Ctrl-C: we left without waiting for the agent
                return ExitCode.CANCELLED
            if written and not written.endswith("\n"):
                out.write("\n")
            return exit_code_for(result.stop_reason, permission_refused=refused)
    except LocalProtocolError as error:
        print(f"accord: {error}", file=sys.stderr)
        return ExitCode.ERROR
    except (TransportError, RequestError, AcpError, OSError) as error:
        print(f"accord: {describe_agent(args)} failed: {error}", file=sys.stderr)
        return ExitCode.AGENT_FAILED


def _is_refusal(event: PermissionResolved) -> bool:
    option = event.option
    return option is None or option.kind in ("reject_once", "reject_always")


async def _cancel_on_interrupt(session: ClientSession, scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        interrupted = False
        async for _ in signals:
            if interrupted:
                scope.cancel()
                return
            interrupted = True
            print("\naccord: cancelling (Ctrl-C again to quit now)", file=sys.stderr)
            await session.cancel()
