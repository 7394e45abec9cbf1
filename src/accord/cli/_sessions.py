"""``accord sessions``: list, show or delete the sessions an agent has stored.

* ``accord sessions [list]``: one line per session, newest first (``--json``: one JSON object
  per line, as the agent sent it); ``--cwd`` keeps only one working directory's sessions.
* ``accord sessions show ID``: the session's history (``session/load`` replays it): the
  prompts (``> ...``), the replies, the tool calls and their diffs (``--json``: the replayed
  ``session/update`` lines).
* ``accord sessions delete ID...``: ``session/delete`` each, saying which were deleted.

Everything the agent sent (ids, titles, directories, history) is printed neutralised.
"""

from __future__ import annotations

import argparse
import os
import sys

import orjson

from ..client import ConnectedAgent, SessionView, connect, neutralise
from ..errors import AcpError, LocalProtocolError
from ..schema import SessionNotification
from ._agent_spec import AgentChoice, agent_spec, close_builtin_agent, run_with_agent
from ._display import Display, colour_wanted
from ._exit_codes import ExitCode
from ._report import explain_agent_error, report
from ._settings import Settings

__all__ = ("sessions_command",)


def sessions_command(args: argparse.Namespace) -> int:
    """Run ``accord sessions`` and return its exit code."""
    args.cwd = os.path.abspath(args.cwd) if args.cwd else None
    if args.action == "list" and args.ids:
        report("accord sessions list takes no session ids (did you mean show or delete?)")
        return ExitCode.USAGE
    if args.action == "show" and len(args.ids) != 1:
        report("accord sessions show takes one session id")
        return ExitCode.USAGE
    if args.action == "delete" and not args.ids:
        report("accord sessions delete takes one or more session ids")
        return ExitCode.USAGE
    return run_with_agent(_sessions, args)


async def _sessions(args: argparse.Namespace, settings: Settings, choice: AgentChoice) -> int:
    try:
        spec = agent_spec(choice, args, settings, needs_model=False)
    except ValueError as error:
        report(str(error))
        return ExitCode.ERROR
    replayed: list[SessionNotification] = []
    try:
        async with connect(spec, update_listener=replayed.append) as conn:
            if args.action == "show":
                return await _show(conn, args, replayed)
            if args.action == "delete":
                return await _delete(conn, args)
            return await _list(conn, args)
    except LocalProtocolError as error:
        what = {"list": "list sessions", "show": "load a session to show it"}
        report(f"{choice.name} cannot {what.get(args.action, 'delete sessions')}: {error}")
        return ExitCode.ERROR
    except (AcpError, OSError, TimeoutError) as error:
        report(explain_agent_error(error, choice.name, builtin=choice.builtin))
        return ExitCode.AGENT_FAILED
    finally:
        await close_builtin_agent(spec)


async def _list(conn: ConnectedAgent, args: argparse.Namespace) -> int:
    out = sys.stdout
    count = 0
    async for info in conn.iter_sessions(args.cwd):
        count += 1
        if args.json:
            out.write(orjson.dumps(info.to_wire()).decode() + "\n")
        else:
            title = neutralise(info.title or "(untitled)", multiline=False)
            updated = neutralise(info.updated_at or "-", multiline=False)
            session_id = neutralise(info.session_id, multiline=False)
            cwd = neutralise(info.cwd, multiline=False)
            out.write(f"{session_id}  {updated}  {title}  [{cwd}]\n")
    if count == 0 and not args.json:
        print("no sessions", file=sys.stderr)
    return ExitCode.OK


async def _show(
    conn: ConnectedAgent, args: argparse.Namespace, replayed: list[SessionNotification]
) -> int:
    session_id: str = args.ids[0]
    cwd: str | None = args.cwd
    if cwd is None and conn.supports("sessionCapabilities", "list"):
        async for info in conn.iter_sessions():
            if info.session_id == session_id:
                cwd = info.cwd
                break
    session = await conn.load_session(session_id, cwd or os.getcwd())
    await session.wait_idle()
    out = sys.stdout
    if args.json:
        for notification in replayed:
            out.write(orjson.dumps(notification.to_wire()).decode() + "\n")
        return ExitCode.OK
    display = Display(out, sys.stderr, terminal=False, colour=colour_wanted(out))
    view = SessionView(session_id)
    for notification in replayed:
        if notification.session_id == session_id:
            display.show(view.apply(notification.update))
    display.end()
    if not replayed:
        print("(the session has no history)", file=sys.stderr)
    return ExitCode.OK


async def _delete(conn: ConnectedAgent, args: argparse.Namespace) -> int:
    code = ExitCode.OK
    for session_id in args.ids:
        try:
            await conn.delete_session(session_id)
        except LocalProtocolError:
            raise
        except AcpError as error:
            report(f"session {session_id} was not deleted: {error}")
            code = ExitCode.AGENT_FAILED
            continue
        print(f"deleted {neutralise(session_id, multiline=False)}")
    return code
