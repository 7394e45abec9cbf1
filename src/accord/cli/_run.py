"""``accord run``: send one prompt to an agent and stream the reply to the terminal.

The reply is printed as it arrives: text inline, tool calls, diffs, plans and permission
questions as readable lines (``--json``: every raw ``session/update`` as one JSON line).
Permission requests are answered by ``--approve-all`` / ``--deny-all``, or asked on the
terminal when stdin is one (otherwise refused); so are the agent's questions (elicitation,
:mod:`._elicit`: advertised only with a terminal) and, when ``session/new`` needs
authentication, the agent's terminal auth method (:mod:`._signin`). Ctrl-C sends
``session/cancel`` and waits for the agent to stop; a second Ctrl-C quits at once. The exit
code says how it ended (see :class:`~accord.cli._main.ExitCode`).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections import Counter
from typing import TextIO

import anyio
import orjson
from anyio.from_thread import BlockingPortal

from ..client import (
    AllowAll,
    Cancel,
    ClientSession,
    DenyAll,
    PermissionContext,
    PermissionDecision,
    PermissionPolicy,
    PermissionRequested,
    PermissionResolved,
    Select,
    TurnRenderer,
    TurnResult,
    UpdateListener,
    connect,
)
from ..errors import AcpError, LocalProtocolError, RequestError, TransportError
from ..schema import SessionNotification, StopReason
from ._agent_spec import agent_spec, close_builtin_agent, describe_agent
from ._elicit import TerminalElicitation
from ._exit_codes import ExitCode
from ._signin import SignedIn, can_sign_in, offer_terminal_auth

__all__ = ("exit_code_for", "run_command")


def run_command(args: argparse.Namespace) -> int:
    """Run ``accord run`` and return its exit code."""
    args.cwd = os.path.abspath(args.cwd or os.getcwd())
    if not os.path.isdir(args.cwd):
        print(f"accord: --cwd {args.cwd} is not a directory", file=sys.stderr)
        return ExitCode.ERROR
    try:
        return anyio.run(_run, args, backend="asyncio")
    except KeyboardInterrupt:  # Ctrl-C before the turn started (e.g. a slow initialize)
        print("\naccord: interrupted", file=sys.stderr)
        return ExitCode.CANCELLED


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
        return _TerminalQuestion()
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


#: How long a question waits for its request to be printed; only a request outside a turn
#: (which the turn's output never shows) waits that long.
_SHOW_WAIT = 2.0


class _TerminalQuestion:
    """Ask the person at the terminal, once the output shows the request.

    The turn's events are printed by the main loop while the policy is called from the
    connection: without waiting, the question could appear before the lines that lead up to
    it, and those lines would then be printed into the question (or after the answer).
    """

    def __init__(self) -> None:
        self._shown: Counter[str] = Counter()  # requests printed, per tool call id
        self._asked: Counter[str] = Counter()
        self._changed = anyio.Event()

    def shown(self, event: PermissionRequested) -> None:
        """The output now shows this request (and everything before it)."""
        self._shown[event.tool_call.tool_call_id] += 1
        self._changed.set()
        self._changed = anyio.Event()

    async def decide(self, context: PermissionContext) -> PermissionDecision:
        key = context.tool_call.tool_call_id
        self._asked[key] += 1
        with anyio.move_on_after(_SHOW_WAIT):
            while self._shown[key] < self._asked[key]:
                await self._changed.wait()
        return await _ask_on_terminal(context)


async def _ask_on_terminal(context: PermissionContext) -> PermissionDecision:
    """Ask the person at the terminal to pick one of the agent's options."""
    lines = [f"\nThe agent asks permission: {context.title or context.tool_call.tool_call_id}"]
    if context.kind != "other":
        lines[0] += f" ({context.kind})"
    for number, option in enumerate(context.options, 1):
        lines.append(f"  {number}. {option.name} [{option.kind}]")
    lines.append("Choose a number (Enter = refuse): ")
    answer = await _ask("\n".join(lines))
    if answer.isdigit() and 1 <= int(answer) <= len(context.options):
        return Select(context.options[int(answer) - 1].option_id)
    refuse = context.option("reject_once", "reject_always")
    return Select(refuse.option_id) if refuse is not None else Cancel()


async def _ask(question: str) -> str:
    """Write ``question`` to stderr and return the line typed in answer (stripped).

    The blocking read runs in a daemon thread of its own, not in anyio's worker threads:
    when Ctrl-C cancels the turn, the question is abandoned with the thread still waiting
    for a line, and a non-daemon thread would keep the process from exiting until Enter.
    """
    answered = anyio.Event()
    answer = ""

    def read() -> None:
        nonlocal answer
        answer = _read_answer(question)
        try:
            portal.call(answered.set)
        except RuntimeError:  # the portal is closed: nobody waits for this answer any more
            pass

    async with BlockingPortal() as portal:
        threading.Thread(target=read, name="accord permission question", daemon=True).start()
        await answered.wait()
    return answer


def _read_answer(question: str) -> str:
    sys.stderr.write(question)
    sys.stderr.flush()
    # The file descriptor, not sys.stdin: an abandoned thread blocked here holds no lock
    # that the interpreter would need at exit.
    line = b""
    while not line.endswith(b"\n"):
        chunk = os.read(sys.stdin.fileno(), 1024)
        if not chunk:  # end of input (Ctrl-D)
            break
        line += chunk
    return line.decode(errors="replace").strip()


def _json_printer(out: TextIO) -> UpdateListener:
    def print_update(notification: SessionNotification) -> None:
        out.write(orjson.dumps(notification.to_wire()).decode() + "\n")
        out.flush()

    return print_update


async def _run(args: argparse.Namespace) -> int:
    try:
        return await _run_once(args, sign_in=True)
    except SignedIn:  # the agent's terminal auth method succeeded: once more
        return await _run_once(args, sign_in=False)


async def _run_once(args: argparse.Namespace, *, sign_in: bool) -> int:
    cwd: str = args.cwd
    out = sys.stdout
    refused = False
    try:
        spec = agent_spec(args)
    except (ValueError, AcpError) as error:
        print(f"accord: {error}", file=sys.stderr)
        return ExitCode.ERROR
    listener = _json_printer(out) if args.json else None
    policy = _policy(args)
    question = policy if isinstance(policy, _TerminalQuestion) else None
    written = ""  # the last text printed: does the output end mid-line?
    try:
        async with connect(
            spec,
            cwd=cwd,
            fs=True,
            terminals=True,
            permission_policy=policy,
            elicitation_policy=TerminalElicitation(_ask) if sys.stdin.isatty() else None,
            terminal_auth=can_sign_in(spec),
            update_listener=listener,
        ) as conn:
            if args.session:
                try:
                    session = await conn.load_session(args.session, cwd)
                except LocalProtocolError as error:  # the agent does not offer session/load
                    agent = describe_agent(args)
                    print(
                        f"accord: {agent} cannot continue session {args.session!r}: {error}",
                        file=sys.stderr,
                    )
                    return ExitCode.ERROR
            else:
                try:
                    session = await conn.new_session(cwd)
                except RequestError as error:  # -32000: sign in first, if the agent says how
                    signing_in = error.code == -32000 and sign_in
                    if signing_in and await offer_terminal_auth(conn, spec, cwd, _ask):
                        raise SignedIn from None
                    raise
            renderer = TurnRenderer()
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
                        if question is not None and isinstance(event, PermissionRequested):
                            question.shown(event)
                    result = stream.result
                task_group.cancel_scope.cancel()
            _end_line(out, written)
            if result is None:  # a second Ctrl-C: we left without waiting for the agent
                return ExitCode.CANCELLED
            return exit_code_for(result.stop_reason, permission_refused=refused)
    except LocalProtocolError as error:
        _end_line(out, written)
        print(f"accord: {error}", file=sys.stderr)
        return ExitCode.ERROR
    except (TransportError, RequestError, AcpError, OSError) as error:
        _end_line(out, written)
        print(f"accord: {describe_agent(args)} failed: {error}", file=sys.stderr)
        return ExitCode.AGENT_FAILED
    finally:
        await close_builtin_agent(spec)


def _end_line(out: TextIO, written: str) -> None:
    """End the line the reply stopped in, so what follows (or the shell prompt) starts afresh."""
    if written and not written.endswith("\n"):
        out.write("\n")
        out.flush()


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
