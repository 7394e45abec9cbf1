"""``accord run``: send one prompt to an agent and show the reply and the work as it happens.

The prompt is the argument, or stdin (``-``, or piped with no argument), or ``--file``
(after the argument when both are given). The reply is shown as it arrives by
:class:`~._display.Display` (tool calls, diffs, plans, permission questions; every string
from the agent neutralised), ending with a summary line (the stop reason in words, the
session id, the usage); ``-q`` prints only the final answer, ``--json`` every raw
``session/update`` as one JSON line and then one result record (see :func:`result_record`).

Permission requests are answered by ``--approve-all`` / ``--deny-all``, or asked on the
terminal when stdin is one (otherwise refused): see :mod:`._question`; so are the agent's
questions (elicitation, :mod:`._elicit`: advertised only with a terminal) and, when
``session/new`` needs authentication, the agent's terminal auth method (:mod:`._signin`).
Ctrl-C sends
``session/cancel`` and waits for the agent to stop; a second Ctrl-C quits at once. The exit
code says how it ended (see :class:`~accord.cli._main.ExitCode`).

``--session ID --resume`` joins a session where it is open (``session/resume``: a served agent
other clients use). If the agent says another client's turn is running (an accord agent does),
that turn is shown as it goes on, under a line saying whose it is, and the prompt is sent
once the agent takes it: a prompt refused as busy is sent again every
:data:`BUSY_RETRY_SECONDS` (ACP tells a client nothing of turns it did not prompt, so this
works with any agent).
"""

from __future__ import annotations

import argparse
import io
import os
import signal
import sys
from dataclasses import dataclass
from typing import Any, TextIO, cast

import anyio
import orjson

from ..client import (
    AgentSpec,
    AllowAll,
    ClientSession,
    ConnectedAgent,
    DenyAll,
    PermissionPolicy,
    PermissionRequested,
    PermissionResolved,
    SessionView,
    TurnResult,
    UpdateListener,
    accord_client_info,
    connect,
    neutralise,
)
from ..errors import AcpError, LocalProtocolError, RequestError, TransportError
from ..schema import (
    SelectSessionConfigOption,
    SessionConfigSelectGroup,
    SessionNotification,
    StopReason,
    TerminalAuthMethod,
)
from ..transports import SubprocessTransport
from ._agent_spec import (
    AgentChoice,
    AgentSpecError,
    agent_spec,
    builtin_model,
    choose_agent,
    close_builtin_agent,
)
from ._display import Display, colour_wanted
from ._elicit import Ask, TerminalElicitation
from ._exit_codes import ExitCode
from ._question import RefuseWithNotice, TerminalQuestion, terminal_asker
from ._report import explain_agent_error, report
from ._settings import Settings, SettingsError, load
from ._signin import SignedIn, can_sign_in, offer_sign_in

__all__ = ("exit_code_for", "read_prompt", "result_record", "run_command")

#: Seconds ``initialize`` may take before a notice (on a terminal) says what is awaited.
INITIALIZE_NOTICE = 3.0
#: Seconds between spinner frames.
SPINNER_INTERVAL = 0.1

BUSY_RETRY_SECONDS = 0.25
"""How often ``--resume`` sends its prompt again while another client's turn runs."""


class _Failed(Exception):
    """A failure already worded for the person: one line, and the exit code."""

    def __init__(self, message: str, code: ExitCode) -> None:
        super().__init__(message)
        self.code = code


def read_prompt(args: argparse.Namespace, stdin: TextIO | None = None) -> str:
    """The prompt: the argument, stdin (``-`` or piped with no argument), and/or ``--file``.

    Raises:
        ValueError: no prompt at all, an empty one, or an unreadable ``--file``.
    """
    source: TextIO = sys.stdin if stdin is None else stdin
    parts: list[str] = []
    prompt: str | None = args.prompt
    if prompt == "-" or (prompt is None and args.file is None and not _isatty(source)):
        parts.append(source.read())
    elif prompt is not None:
        parts.append(prompt)
    if args.file == "-":
        if prompt == "-":
            raise ValueError("the prompt cannot be read from stdin twice (- and --file -)")
        parts.append(source.read())
    elif args.file is not None:
        try:
            with open(args.file, encoding="utf-8") as file:
                parts.append(file.read())
        except (OSError, UnicodeDecodeError) as error:
            reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
            raise ValueError(f"cannot read --file {args.file}: {reason}") from None
    if not parts:
        raise ValueError(
            'give a prompt: accord run "PROMPT", or pipe it in (accord run - < file), '
            "or --file PATH"
        )
    text = "\n\n".join(part.strip("\n") for part in parts)
    if not text.strip():
        where = (
            "--file"
            if args.file is not None and prompt is None
            else ("stdin" if prompt in (None, "-") else "the argument")
        )
        raise ValueError(f"the prompt is empty (from {where})")
    return text


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def run_command(args: argparse.Namespace) -> int:
    """Run ``accord run`` and return its exit code."""
    try:
        settings = load()
    except SettingsError as error:
        report(str(error))
        return ExitCode.ERROR
    try:
        prompt = read_prompt(args)
    except ValueError as error:
        report(str(error))
        return ExitCode.ERROR
    if args.resume and args.session is None:
        report("--resume needs --session ID (the session to join)")
        return ExitCode.ERROR
    args.cwd = os.path.abspath(args.cwd or os.getcwd())
    if not os.path.isdir(args.cwd):
        report(f"--cwd {args.cwd} is not a directory")
        return ExitCode.ERROR
    args.add_dir = [os.path.abspath(path) for path in args.add_dir or ()]
    for path in args.add_dir:
        if not os.path.isdir(path):
            report(f"--add-dir {path} is not a directory")
            return ExitCode.ERROR
    try:
        choice = choose_agent(args.agent, settings)
    except AgentSpecError as error:
        report(str(error))
        return ExitCode.ERROR
    try:
        return anyio.run(_run, args, settings, choice, prompt, backend="asyncio")
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


def result_record(
    *,
    exit_code: int,
    stop_reason: StopReason | None,
    session_id: str | None,
    usage: dict[str, Any] | None,
    text: str,
    error: str | None,
) -> dict[str, Any]:
    """The last line of ``--json``: ``{"result": {...}}`` (documented in docs/cli.md)."""
    return {
        "result": {
            "exitCode": exit_code,
            "stopReason": stop_reason,
            "sessionId": session_id,
            "usage": usage,
            "text": text,
            "error": error,
        }
    }


def _policy(args: argparse.Namespace, display: Display) -> PermissionPolicy:
    if args.approve_all:
        return AllowAll()
    if args.deny_all:
        return DenyAll()
    if sys.stdin.isatty():
        return TerminalQuestion(display)
    return RefuseWithNotice(display)


def _json_printer(out: TextIO) -> UpdateListener:
    def print_update(notification: SessionNotification) -> None:
        out.write(orjson.dumps(notification.to_wire()).decode() + "\n")
        out.flush()

    return print_update


@dataclass
class _Outcome:
    code: int = ExitCode.ERROR
    result: TurnResult | None = None
    session_id: str | None = None
    error: str | None = None
    signed_in: bool = False  # the agent's terminal auth method ran: connect once more


async def _run(
    args: argparse.Namespace, settings: Settings, choice: AgentChoice, prompt: str
) -> int:
    out = sys.stdout
    output = "json" if args.json else "quiet" if args.quiet else "text"
    terminal = output == "text" and _isatty(out)
    display = Display(
        out if output == "text" else io.StringIO(),  # -q keeps only the final text
        sys.stderr,
        terminal=terminal,
        colour=output == "text" and colour_wanted(out),
        show_user=False,
    )
    outcome = _Outcome()
    spec: AgentSpec | None = None
    try:
        spec = agent_spec(choice, args, settings, needs_model=True)
    except (AgentSpecError, ValueError) as error:
        outcome.error = str(error)
    for sign_in in (True, False):  # once more after the agent's terminal auth ran
        if spec is None:
            break
        waiting = anyio.CancelScope()
        async with anyio.create_task_group() as background:
            if terminal:
                background.start_soon(_spin, display)
            if _isatty(sys.stderr):
                background.start_soon(_say_waiting, waiting, display, choice, args.timeout)
            try:
                await _connected(
                    args,
                    settings,
                    choice,
                    spec,
                    prompt,
                    display,
                    output,
                    outcome,
                    waiting,
                    sign_in=sign_in,
                )
            finally:
                background.cancel_scope.cancel()
                await close_builtin_agent(spec)
        if not outcome.signed_in:
            break
        outcome = _Outcome()
    if output != "json":
        display.end()
    if outcome.error is not None:
        report(outcome.error)
    elif output == "quiet":
        text = display.final_text
        out.write(neutralise(text) + ("" if text.endswith("\n") or not text else "\n"))
    elif output == "text":
        stop = outcome.result.stop_reason if outcome.result is not None else None
        display.line(display.summary(stop, outcome.session_id))
    if output == "json":
        result = outcome.result
        usage = result.usage.to_wire() if result is not None and result.usage else None
        record = result_record(
            exit_code=outcome.code,
            stop_reason=result.stop_reason if result is not None else None,
            session_id=outcome.session_id,
            usage=usage,
            text=result.text if result is not None else "",
            error=outcome.error,
        )
        out.write(orjson.dumps(record).decode() + "\n")
    out.flush()
    return outcome.code


async def _say_waiting(
    waiting: anyio.CancelScope, display: Display, choice: AgentChoice, limit_seconds: float
) -> None:
    """Say what is being waited for, if ``initialize`` takes a while."""
    with waiting:
        await anyio.sleep(INITIALIZE_NOTICE)
        limit = f"up to {limit_seconds:g} s" if limit_seconds else "no time limit"
        display.notice(
            f"accord: waiting for {neutralise(choice.name)} to start ({limit}; --timeout)"
        )


async def _spin(display: Display) -> None:
    while True:
        await anyio.sleep(SPINNER_INTERVAL)
        display.tick()


async def _connected(
    args: argparse.Namespace,
    settings: Settings,
    choice: AgentChoice,
    spec: AgentSpec,
    prompt: str,
    display: Display,
    output: str,
    outcome: _Outcome,
    waiting: anyio.CancelScope,
    *,
    sign_in: bool,
) -> None:
    """Connect, open the session, run the turn; fill ``outcome`` (never raises a failure).

    ``waiting`` is cancelled once the agent has answered ``initialize``; ``sign_in``: offer
    the agent's terminal auth method if ``session/new`` asks for authentication.
    """
    ask = terminal_asker(display)
    policy = _policy(args, display)
    question = policy if isinstance(policy, TerminalQuestion) else None
    watch = _Watch(display if output != "json" else None)
    json_out = _json_printer(sys.stdout) if output == "json" else None
    listener = watch.listener(json_out)
    try:
        async with connect(
            spec,
            cwd=args.cwd,
            fs=True,
            terminals=not args.deny_all,  # --deny-all: read-only, whatever the agent asks
            read_only=args.deny_all,
            permission_policy=policy,
            elicitation_policy=TerminalElicitation(ask) if sys.stdin.isatty() else None,
            terminal_auth=can_sign_in(spec),
            update_listener=listener,
            client_info=accord_client_info("accord run"),
            initialize_timeout=args.timeout or None,
            on_status=_say_connection_status,
        ) as conn:
            waiting.cancel()
            if args.auth is not None:
                await _authenticate(conn, args.auth)
            session = await _open_signed_in(conn, args, choice, spec, ask, sign_in=sign_in)
            outcome.session_id = session.session_id
            await _set_mode(session, args.mode)
            who = session.turn_client
            if who is not None:
                display.notice(
                    f"accord: {neutralise(who)} is running a turn in this session: shown until"
                    " it ends, then this prompt"
                )
                watch.start(session.session_id)
            await _turn(conn, session, prompt, display, question, output, outcome, watch)
    except SignedIn:
        outcome.signed_in = True
    except _Failed as failure:
        outcome.error, outcome.code = str(failure), failure.code
    except LocalProtocolError as error:
        outcome.error, outcome.code = f"{choice.name}: {error}", ExitCode.ERROR
    except (TransportError, AcpError, OSError, TimeoutError) as error:
        model, base_url = builtin_model(args, settings)
        outcome.error = explain_agent_error(
            error, choice.name, model=model, base_url=base_url, builtin=choice.builtin
        )
        outcome.code = ExitCode.AGENT_FAILED


async def _open_signed_in(
    conn: ConnectedAgent,
    args: argparse.Namespace,
    choice: AgentChoice,
    spec: AgentSpec,
    ask: Ask,
    *,
    sign_in: bool,
) -> ClientSession:
    """Open the session; if the agent answers -32000, sign in as the user chooses and retry.

    Raises:
        SignedIn: a terminal auth method ran: connect again.
        _Failed: the agent still needs authentication and nothing could give it (exit 3).
    """
    try:
        return await _open_session(conn, args, choice)
    except RequestError as error:  # -32000: sign in first, if the agent says how
        if error.code != -32000 or (choice.builtin and args.auth is None):
            raise  # the built-in agent's explanation names its --model and key
        offer = sign_in and args.auth is None
        method = await offer_sign_in(conn, spec, args.cwd, ask) if offer else None
        if method is None:
            raise _Failed(_auth_needed(conn), ExitCode.AGENT_FAILED) from None
    await conn.authenticate(method.id)
    try:
        return await _open_session(conn, args, choice)
    except RequestError as error:
        if error.code != -32000:
            raise
        raise _Failed(
            f"the agent still needs you to sign in after authenticate with"
            f" {neutralise(method.id)!r}: {_methods_offered(conn)}",
            ExitCode.AGENT_FAILED,
        ) from None


def _say_connection_status(line: str) -> None:
    """A served agent's connection dropped or is back: one line on stderr."""
    print(f"accord: {line}", file=sys.stderr, flush=True)


async def _authenticate(conn: ConnectedAgent, method_id: str) -> None:
    """``--auth METHOD``: ``authenticate`` with the agent's ``agent``-type method ``METHOD``.

    Raises:
        _Failed: the agent offers no such method (exit 1), or it is a terminal method (exit 1).
    """
    method = next((m for m in conn.auth_methods if m.id == method_id), None)
    if method is None:
        raise _Failed(
            f"unknown --auth {neutralise(method_id)!r}: {_methods_offered(conn)}",
            ExitCode.ERROR,
        )
    if isinstance(method, TerminalAuthMethod):
        raise _Failed(
            f"--auth {neutralise(method_id)!r} is a terminal method: run accord run without"
            " --auth on a terminal, and it is offered when the agent asks to sign in",
            ExitCode.ERROR,
        )
    await conn.authenticate(method_id)


def _methods_offered(conn: ConnectedAgent) -> str:
    """What ``conn``'s agent offers to sign in with, in one clause."""
    if not conn.auth_methods:
        return "the agent offers no auth method"
    listed = ", ".join(
        f"{neutralise(m.id)} ({'terminal' if isinstance(m, TerminalAuthMethod) else 'agent'}:"
        f" {neutralise(m.name)})"
        for m in conn.auth_methods
    )
    return f"the agent offers {listed}"


def _auth_needed(conn: ConnectedAgent) -> str:
    """The message for a ``session/new`` that asks for authentication nothing could give."""
    hint = ""
    if any(not isinstance(m, TerminalAuthMethod) for m in conn.auth_methods):
        hint = "; run again with --auth METHOD"
    if any(isinstance(m, TerminalAuthMethod) for m in conn.auth_methods):
        hint += "; terminal methods are offered when accord run runs on a terminal"
    return f"the agent needs you to sign in first: {_methods_offered(conn)}{hint}"


async def _open_session(
    conn: ConnectedAgent, args: argparse.Namespace, choice: AgentChoice
) -> ClientSession:
    cwd: str = args.cwd
    extra: list[str] = args.add_dir
    session_id: str | None = args.session
    if args.continue_:
        if not conn.supports("sessionCapabilities", "list"):
            raise _Failed(
                f"{choice.name} cannot list its sessions, so --continue cannot find the last one",
                ExitCode.ERROR,
            )
        latest = None
        async for info in conn.iter_sessions(cwd):
            if latest is None or (info.updated_at or "") > (latest.updated_at or ""):
                latest = info
        if latest is None:
            raise _Failed(f"no earlier session in {cwd} to continue", ExitCode.ERROR)
        session_id = latest.session_id
    if extra and not conn.supports("sessionCapabilities", "additionalDirectories"):
        raise _Failed(
            f"{choice.name} does not accept further directories (it does not advertise"
            " sessionCapabilities.additionalDirectories), so --add-dir cannot be used",
            ExitCode.ERROR,
        )
    if session_id is None:
        return await conn.new_session(cwd, additional_directories=extra)
    if args.resume:
        try:
            return await conn.resume_session(session_id, cwd, additional_directories=extra)
        except LocalProtocolError as error:  # the agent does not offer session/resume
            raise _Failed(
                f"{choice.name} cannot join session {session_id!r}: {error}", ExitCode.ERROR
            ) from None
    try:
        return await conn.load_session(session_id, cwd, additional_directories=extra)
    except LocalProtocolError as error:  # the agent does not offer session/load
        raise _Failed(
            f"{choice.name} cannot continue session {session_id!r}: {error}", ExitCode.ERROR
        ) from None


async def _set_mode(session: ClientSession, mode: str | None) -> None:
    """Switch to ``mode`` through the agent's mode config option, else its ``modes``."""
    if mode is None:
        return
    view = session.view
    option = next(
        (
            o
            for o in view.config_options
            if isinstance(o, SelectSessionConfigOption) and o.category == "mode"
        ),
        None,
    )
    if option is not None:
        offered = [
            choice.value
            for entry in option.options
            for choice in (
                entry.options if isinstance(entry, SessionConfigSelectGroup) else [entry]
            )
        ]
        current: str | None = option.current_value
    else:
        offered = [m.id for m in view.available_modes]
        current = view.current_mode_id
    if not offered:
        raise _Failed("the agent offers no modes, so --mode cannot be used", ExitCode.ERROR)
    if mode not in offered:
        names = ", ".join(offered)
        raise _Failed(f"unknown --mode {mode!r}: the agent offers {names}", ExitCode.ERROR)
    if current == mode:
        return
    if option is not None:
        await session.set_config_option(option.id, mode)
    else:
        await session.set_mode(mode)


async def _turn(
    conn: ConnectedAgent,
    session: ClientSession,
    prompt: str,
    display: Display,
    question: TerminalQuestion | None,
    output: str,
    outcome: _Outcome,
    watch: _Watch,
) -> None:
    refused = False
    async with anyio.create_task_group() as task_group:
        task_group.start_soon(_cancel_on_interrupt, conn, session, display)
        while True:
            # While a prompt is out, its stream shows what arrives (the other client's turn
            # too, if the prompt is then refused as busy); in between, the watch does.
            watching = watch.stop()
            try:
                async with session.stream(prompt) as stream:
                    async for event in stream:
                        if isinstance(event, PermissionResolved) and _is_refusal(event):
                            refused = True
                        if output != "json":
                            display.show(event)
                        if question is not None and isinstance(event, PermissionRequested):
                            question.shown(event)
                    outcome.result = stream.result
            except RequestError as error:
                if watching is None or not _busy(error):
                    raise
                watch.start(watching)
                await anyio.sleep(BUSY_RETRY_SECONDS)
                continue
            break
        task_group.cancel_scope.cancel()
    result = outcome.result
    assert result is not None
    outcome.code = exit_code_for(result.stop_reason, permission_refused=refused)


def _busy(error: RequestError) -> bool:
    """Whether the agent refused a prompt because a turn runs (-32602, ``reason: busy``)."""
    data: object = error.data
    if error.code != -32602 or not isinstance(data, dict):
        return False
    return cast(dict[str, Any], data).get("reason") == "busy"


class _Watch:
    """Shows the updates of a turn this client did not prompt (``--resume``), while on.

    Its own view folds them (the session's own view has no turn to give them to), so a tool
    call's later updates show with what it was; off, it shows nothing.
    """

    def __init__(self, display: Display | None) -> None:
        self._display = display
        self._view: SessionView | None = None

    def listener(self, then: UpdateListener | None) -> UpdateListener:
        """The connection's update listener: this watch first, then ``then`` (if any)."""

        def on_update(notification: SessionNotification) -> None:
            view = self._view
            if view is not None and notification.session_id == view.session_id:
                event = view.apply(notification.update)
                if self._display is not None:
                    self._display.show(event)
            if then is not None:
                then(notification)

        return on_update

    def start(self, session_id: str) -> None:
        """Show the updates of ``session_id`` from now on."""
        if self._view is None or self._view.session_id != session_id:
            self._view = SessionView(session_id)

    def stop(self) -> str | None:
        """Show nothing more (this client's own prompt goes out); the session it showed."""
        view, self._view = self._view, None
        return None if view is None else view.session_id


def _is_refusal(event: PermissionResolved) -> bool:
    option = event.option
    return option is None or option.kind in ("reject_once", "reject_always")


async def _cancel_on_interrupt(
    conn: ConnectedAgent, session: ClientSession, display: Display
) -> None:
    with anyio.open_signal_receiver(signal.SIGINT) as signals:
        interrupted = False
        async for _ in signals:
            if interrupted:
                display.end()
                _quit_now(conn)
            interrupted = True
            display.notice("accord: cancelling (Ctrl-C again to quit now)")
            await session.cancel()


def _quit_now(conn: ConnectedAgent) -> None:
    """The second Ctrl-C: ask a spawned agent to stop (SIGTERM) and exit without waiting."""
    transport: object = conn.transport
    while not isinstance(transport, SubprocessTransport) and hasattr(transport, "inner"):
        transport = getattr(transport, "inner")  # noqa: B009 - a wrapper's inner transport
    if isinstance(transport, SubprocessTransport):
        pid = transport.pid
        try:
            os.killpg(pid, signal.SIGTERM)
        except OSError:
            pass
    sys.stdout.flush()
    print("accord: quit without waiting for the agent", file=sys.stderr, flush=True)
    os._exit(ExitCode.CANCELLED)
