"""The small agents the process-level tests drive: one script, the behaviour chosen by name.

Run as ``python script_agent.py NAME [ARGS...]``; a test builds the command line with
:func:`script_agent` (``from helpers.script_agent import script_agent``). Every one speaks ACP
over its stdio through ``accord.roles.run_agent_stdio``; sessions are ``NAME-1``, ``NAME-2``,
... unless said otherwise. The names:

* ``crash [--exit CODE | --error]``: fails in the middle of a prompt turn, after the chunk
  ``partial``. ``--exit CODE`` (the default, code 3): writes a traceback-like message to
  stderr and exits with CODE, the prompt unanswered. ``--error``: stays alive and answers the
  prompt with a JSON-RPC error (-32603, ``model exploded``). With ``CRASH_AT=start`` in its
  environment it dies before answering ``initialize`` (a usage message, exit 2), as an agent
  started with the wrong flags does.
* ``cwd``: answers every prompt with ``session cwd: <cwd from session/new>``.
* ``dirs``: uses the client's file system where the prompt tells it to. It accepts
  ``additionalDirectories``. The prompt is a JSON object of paths: ``read`` (read and quoted
  back), ``write`` (written with ``written by the agent``), and ``outside_read`` /
  ``outside_write`` (tried the same way; each is expected to be refused). The reply has one
  line per attempt, ``<op> <path>: ok <text>`` or ``<op> <path>: refused <error>``, after
  ``roots: <the directories session/new carried>``.
* ``hostile [--crash]``: attacks the terminal of the client driving it. Every string it sends
  carries terminal control sequences (:data:`ATTACK`: an OSC 52 clipboard write, an OSC 0
  window title, cursor movement and screen clearing, a C1 CSI, BEL, a bidi override). A prompt
  gets a thought and a reply carrying them, a title update, a tool call (kind ``execute``)
  whose title, command, path and diff carry them, and a permission request offering an option
  *named* ``Deny`` with ``ESC[8m`` (invisible text) hiding "allow always" but of kind
  ``allow_always``, and a true ``reject_once``; then it says ``chosen: ID`` (or ``chosen:
  cancelled``). ``session/list`` gives one session whose id, title and cwd carry them.
  ``--crash``: on prompt it writes them to stderr and exits with code 1.
* ``mode_option``: offers its modes only as a ``select`` config option of category ``mode``
  (``mode``: ``ask``, ``code``; ``ask`` first), no ``modes``; answers
  ``session/set_config_option`` and every prompt with ``mode: <current>``.
* ``noisy``: floods stderr with ``NOISE_MB`` megabytes (default 16; half in ``initialize``,
  half in the prompt) with blocking writes, so it stalls unless the client drains its stderr;
  then answers ``quiet now``.
* ``refusal``: declines every prompt: ``I cannot help with that.``, then ``refusal``.
* ``signin [--terminal | --both]``: needs authentication: ``session/new`` answers -32000 until
  ``authenticate`` named its ``agent`` method ``token`` (``Use the saved token``); another id is
  -32602. ``--terminal``: it offers only a ``terminal`` method (``setup``) instead; ``--both``:
  ``setup`` first, then ``token``. A prompt is answered ``signed in with token``.
* ``slow_start``: an echo agent whose ``initialize`` says ``loading the model...`` on stderr
  and takes ``SLOW_START`` seconds (default 2), like an agent that downloads or compiles
  first; it stops waiting when the client goes away.
* ``store STORE``: sessions that outlive the process, kept in the JSON file STORE, named
  ``s1``, ``s2``, ... A prompt is answered ``[ID] turn N: PROMPT``, followed by ``(earlier: A
  / B)`` when the session had earlier prompts; the first prompt becomes the title.
  ``session/load`` replays the history (user and agent message chunks); ``session/list``
  gives every session (those under ``cwd`` when given), most recently updated first, with
  ``updatedAt`` ``2030-01-01T00:00:SSZ``, SS counting changes to the store;
  ``session/delete`` removes one. An unknown id is ``-32002`` (resource not found).
* ``stuck FIFO [--in initialize|prompt]``: never finishes. On reaching the place where it
  hangs it opens the named pipe FIFO, writes ``ready PID`` and keeps the pipe open for the
  rest of its life, so the test knows when to interrupt the client and, from the end of file,
  that the process is gone. In ``prompt`` (the default) it first streams ``working``, and it
  ignores ``session/cancel``.
* ``usage [--no-usage]``: reports what a turn cost: ``usage_update`` (12,345 of 200,000) and
  token counts in ``PromptResponse.usage``; ``--cost``: the update carries a cost of 0.0123
  USD; ``--no-usage``: neither. The reply is ``counted.``.
* ``workflow [--twice]``: plays one coding step. A plan (``Read config.toml`` in progress,
  ``Update config.toml`` pending); the text ``Looking at config.toml.``; a tool call
  ``edit-1`` (kind ``edit``, ``Update config.toml``, pending) and a permission request for it
  (:data:`WORKFLOW_OPTIONS`: ``allow``, ``always``, ``reject``). Allowed: the call completes
  with a diff of ``<cwd>/config.toml`` (``debug = false`` -> ``debug = true``), the plan is
  done and the text says ``Permission granted: config.toml updated.``; refused or cancelled:
  the call fails and the text says ``Permission refused (OUTCOME): nothing changed.``.
  ``stopReason`` is ``end_turn``, ``cancelled`` if the client cancelled. ``--twice``: a second
  call (``run-1``, kind ``execute``, ``Run the tests``) asks permission too. ``--odd-kinds``:
  the options are :data:`ODD_KIND_OPTIONS` (``allow`` named ``Go ahead`` without a kind, and
  ``reject``), as agents that bend the schema send them.
"""

from __future__ import annotations

import os
import sys

if __name__ == "__main__" and sys.argv[1:2] == ["slow_start"]:
    # Said before the slow imports, for a client that gives up early.
    sys.stderr.write("loading the model...\n")
    sys.stderr.flush()

import json
from pathlib import Path
from typing import Any, ClassVar

import anyio

from accord.errors import (
    AuthRequired,
    InternalError,
    InvalidParams,
    RequestError,
    ResourceNotFound,
)
from accord.roles import Agent, run_agent_stdio
from accord.schema import (
    AgentThoughtChunkSessionUpdate,
    AuthenticateRequest,
    AuthenticateResponse,
    AuthMethodAgent,
    CancelNotification,
    Cost,
    DeleteSessionRequest,
    DeleteSessionResponse,
    DiffToolCallContent,
    InitializeRequest,
    InitializeResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PermissionOption,
    PlanEntry,
    PlanEntryStatus,
    PlanSessionUpdate,
    PromptRequest,
    PromptResponse,
    ReadTextFileRequest,
    RequestPermissionRequest,
    SelectedRequestPermissionOutcome,
    SelectSessionConfigOption,
    SessionConfigOption,
    SessionInfo,
    SessionInfoUpdateSessionUpdate,
    SessionNotification,
    SessionUpdate,
    SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse,
    TerminalAuthMethod,
    TextContentBlock,
    ToolCallLocation,
    ToolCallSessionUpdate,
    ToolCallUpdate,
    ToolCallUpdateSessionUpdate,
    ToolKind,
    Usage,
    UsageUpdateSessionUpdate,
    UserMessageChunkSessionUpdate,
    WriteTextFileRequest,
)

SCRIPT = Path(__file__).resolve()


def script_agent(name: str, *args: str) -> list[str]:
    """The command line running the agent ``name`` (see the module doc) with ``args``."""
    if name not in AGENTS:
        raise ValueError(f"no script agent {name!r}; the names: {', '.join(sorted(AGENTS))}")
    return [sys.executable, str(SCRIPT), name, *args]


class ScriptAgent(Agent):
    """What every script shares: numbered sessions that remember their roots, and sending."""

    name: ClassVar[str]

    def __init__(self, args: list[str]) -> None:
        self.args = args
        self.roots: dict[str, list[str]] = {}

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        session_id = f"{self.name}-{len(self.roots) + 1}"
        self.roots[session_id] = [request.cwd, *(request.additional_directories or [])]
        return NewSessionResponse(session_id=session_id)

    def option(self, flag: str, default: str) -> str:
        """The word after ``flag`` in the arguments, or ``default``."""
        return self.args[self.args.index(flag) + 1] if flag in self.args else default

    async def send(self, session_id: str, update: SessionUpdate) -> None:
        await self.client.session_update(SessionNotification(session_id=session_id, update=update))

    async def say(self, session_id: str, text: str) -> None:
        await self.client.send_chunk(session_id, text)


def prompt_text(request: PromptRequest, separator: str = "") -> str:
    """The prompt's text blocks, joined."""
    return separator.join(b.text for b in request.prompt if isinstance(b, TextContentBlock))


class CrashAgent(ScriptAgent):
    name = "crash"

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.say(request.session_id, "partial")
        if "--error" in self.args:
            raise InternalError("model exploded")
        sys.stderr.write("Traceback (most recent call last):\nRuntimeError: model exploded\n")
        sys.stderr.flush()
        os._exit(int(self.option("--exit", "3")))


class CwdAgent(ScriptAgent):
    name = "cwd"

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.say(request.session_id, f"session cwd: {self.roots[request.session_id][0]}")
        return PromptResponse(stop_reason="end_turn")


class ModeOptionAgent(ScriptAgent):
    name = "mode_option"

    def __init__(self, args: list[str]) -> None:
        super().__init__(args)
        self.modes: dict[str, str] = {}

    def _options(self, session_id: str) -> list[SessionConfigOption]:
        return [
            SelectSessionConfigOption.model_validate(
                {
                    "type": "select",
                    "id": "mode",
                    "name": "Mode",
                    "category": "mode",
                    "currentValue": self.modes[session_id],
                    "options": [{"value": "ask", "name": "Ask"}, {"value": "code", "name": "Code"}],
                }
            )
        ]

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        response = await super().new_session(request)
        self.modes[response.session_id] = "ask"
        return response.model_copy(update={"config_options": self._options(response.session_id)})

    async def set_session_config_option(
        self, request: SetSessionConfigOptionRequest
    ) -> SetSessionConfigOptionResponse:
        if request.config_id != "mode" or request.value not in ("ask", "code"):
            raise InvalidParams(f"no such option value: {request.config_id}={request.value!r}")
        assert isinstance(request.value, str)
        self.modes[request.session_id] = request.value
        return SetSessionConfigOptionResponse(config_options=self._options(request.session_id))

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.say(request.session_id, f"mode: {self.modes[request.session_id]}")
        return PromptResponse(stop_reason="end_turn")


class SignInAgent(ScriptAgent):
    name = "signin"

    def __init__(self, args: list[str]) -> None:
        super().__init__(args)
        self.signed_in = False
        terminal = {"type": "terminal", "id": "setup", "name": "Set up", "args": ["--setup"]}
        token = AuthMethodAgent(id="token", name="Use the saved token")
        if "--terminal" in args:
            self.auth_methods = [TerminalAuthMethod.model_validate(terminal)]
        elif "--both" in args:
            self.auth_methods = [TerminalAuthMethod.model_validate(terminal), token]
        else:
            self.auth_methods = [token]

    async def authenticate(self, request: AuthenticateRequest) -> AuthenticateResponse:
        if request.method_id != "token" or "--terminal" in self.args:
            raise InvalidParams(f"no auth method {request.method_id!r}")
        self.signed_in = True
        return AuthenticateResponse()

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        if not self.signed_in:
            raise AuthRequired("sign in first")
        return await super().new_session(request)

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.say(request.session_id, "signed in with token")
        return PromptResponse(stop_reason="end_turn")


class DirsAgent(ScriptAgent):
    name = "dirs"
    additional_directories = True

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        session_id = request.session_id
        paths: dict[str, str] = json.loads(prompt_text(request))
        lines = [f"roots: {' '.join(self.roots[session_id])}"]
        for op, path in paths.items():
            try:
                if op.endswith("read"):
                    read = await self.client.read_text_file(
                        ReadTextFileRequest(session_id=session_id, path=path)
                    )
                    lines.append(f"{op} {path}: ok {read.content.strip()}")
                else:
                    await self.client.write_text_file(
                        WriteTextFileRequest(
                            session_id=session_id, path=path, content="written by the agent\n"
                        )
                    )
                    lines.append(f"{op} {path}: ok")
            except RequestError as error:
                lines.append(f"{op} {path}: refused {error.message}")
        await self.say(session_id, "\n".join(lines) + "\n")
        return PromptResponse(stop_reason="end_turn")


CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"  # OSC 52: put "rm -rf ~" on the clipboard
TITLE = "\x1b]0;pwned\x1b\\"  # OSC 0: the window title, ended by ST
CURSOR = "\x1b[2J\x1b[H\x1b[3A"  # clear the screen, home, three lines up
C1 = "\x9b31m"  # a one-character CSI
HIDDEN = "\x1b[8m"  # invisible text
ATTACK = f"{CLIPBOARD}{TITLE}{CURSOR}{C1}\x07\u202e"
"""What the ``hostile`` agent puts in every string it sends."""

HOSTILE_OPTIONS = [
    PermissionOption(option_id="sneaky", name=f"Deny{HIDDEN} (allow always)", kind="allow_always"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]


async def ask_permission(
    agent: ScriptAgent, session_id: str, call: ToolCallUpdate, options: list[PermissionOption]
) -> str:
    """Ask permission for ``call``: the selected option id, or ``cancelled``."""
    response = await agent.client.request_permission(
        RequestPermissionRequest(session_id=session_id, tool_call=call, options=options)
    )
    outcome = response.outcome
    if isinstance(outcome, SelectedRequestPermissionOutcome):
        return outcome.option_id
    return "cancelled"


class HostileAgent(ScriptAgent):
    name = "hostile"

    async def list_sessions(self, request: ListSessionsRequest) -> ListSessionsResponse:
        info = SessionInfo(
            session_id=f"s{CLIPBOARD}1", cwd=f"/tmp{CURSOR}", title=f"t{TITLE}{HIDDEN}x"
        )
        return ListSessionsResponse(sessions=[info])

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        session_id = request.session_id
        if "--crash" in self.args:
            sys.stderr.write(f"dying{ATTACK}\n")
            sys.stderr.flush()
            os._exit(1)
        thought = TextContentBlock(text=f"think{ATTACK}\n")
        await self.send(session_id, AgentThoughtChunkSessionUpdate(content=thought))
        await self.say(session_id, f"reply{ATTACK}\n")
        await self.send(session_id, SessionInfoUpdateSessionUpdate(title=f"title{ATTACK}"))
        diff = DiffToolCallContent(
            path=f"/tmp/a{TITLE}.txt", old_text="old\n", new_text=f"new{ATTACK}\n"
        )
        title = f"Run {HIDDEN}something else{CURSOR}"
        await self.send(
            session_id,
            ToolCallSessionUpdate(
                tool_call_id="t1",
                title=title,
                kind="execute",
                status="pending",
                raw_input={"command": f"ls{CURSOR}; true{CLIPBOARD}"},
                locations=[ToolCallLocation(path=f"/tmp/{CLIPBOARD}x")],
                content=[diff],
            ),
        )
        call = ToolCallUpdate(tool_call_id="t1", kind="execute", title=title)
        chosen = await ask_permission(self, session_id, call, HOSTILE_OPTIONS)
        await self.say(session_id, f"chosen: {chosen}\n")
        return PromptResponse(stop_reason="end_turn")


NOISE_LINE = b"debug: " + b"x" * 1016 + b"\n"  # 1 KiB


def flood(megabytes: int) -> None:
    """Write ``megabytes`` of lines to stderr with blocking writes."""
    for _ in range(megabytes * 1024):
        os.write(2, NOISE_LINE)


class NoisyAgent(ScriptAgent):
    name = "noisy"

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        flood(int(os.environ.get("NOISE_MB", "16")) // 2)
        return await super().initialize(request)

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        flood(int(os.environ.get("NOISE_MB", "16")) // 2)
        await self.say(request.session_id, "quiet now")
        return PromptResponse(stop_reason="end_turn")


class RefusalAgent(ScriptAgent):
    name = "refusal"

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.say(request.session_id, "I cannot help with that.")
        return PromptResponse(stop_reason="refusal")


#: How often the slow start looks whether the client is still there.
POLL_SECONDS = 0.05


class SlowStartAgent(ScriptAgent):
    name = "slow_start"

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        with anyio.move_on_after(float(os.environ.get("SLOW_START", "2"))):
            # Polled: the connection offers no event for "the peer hung up" while a handler
            # (this one) still runs.
            while not self.client.closed:  # noqa: ASYNC110
                await anyio.sleep(POLL_SECONDS)
        return await super().initialize(request)

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.say(request.session_id, prompt_text(request))
        return PromptResponse(stop_reason="end_turn")


class StoreAgent(ScriptAgent):
    name = "store"

    def __init__(self, args: list[str]) -> None:
        super().__init__(args)
        self._path = Path(args[0])

    def _read(self) -> dict[str, Any]:
        if not self._path.exists():
            return {"changes": 0, "sessions": {}}
        return json.loads(self._path.read_text())

    def _write(self, store: dict[str, Any]) -> None:
        store["changes"] += 1
        self._path.write_text(json.dumps(store, indent=1))

    @staticmethod
    def _stamp(store: dict[str, Any]) -> str:
        return f"2030-01-01T00:00:{store['changes'] + 1:02d}Z"

    def _session(self, store: dict[str, Any], session_id: str) -> dict[str, Any]:
        session = store["sessions"].get(session_id)
        if session is None:
            raise ResourceNotFound(f"no stored session {session_id}")
        return session

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        store = self._read()
        session_id = f"s{len(store['sessions']) + 1}"
        store["sessions"][session_id] = {
            "cwd": request.cwd,
            "title": None,
            "updatedAt": self._stamp(store),
            "history": [],
        }
        self._write(store)
        return NewSessionResponse(session_id=session_id)

    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        for role, text in self._session(self._read(), request.session_id)["history"]:
            if role == "user":
                content = TextContentBlock(text=text)
                await self.send(request.session_id, UserMessageChunkSessionUpdate(content=content))
            else:
                await self.say(request.session_id, text)
        return LoadSessionResponse()

    async def list_sessions(self, request: ListSessionsRequest) -> ListSessionsResponse:
        sessions = [
            SessionInfo(
                session_id=session_id,
                cwd=session["cwd"],
                title=session["title"],
                updated_at=session["updatedAt"],
            )
            for session_id, session in self._read()["sessions"].items()
            if request.cwd is None or session["cwd"] == request.cwd
        ]
        sessions.sort(key=lambda info: info.updated_at or "", reverse=True)
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, request: DeleteSessionRequest) -> DeleteSessionResponse:
        store = self._read()
        self._session(store, request.session_id)
        del store["sessions"][request.session_id]
        self._write(store)
        return DeleteSessionResponse()

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        store = self._read()
        session = self._session(store, request.session_id)
        text = prompt_text(request, " ")
        earlier = [said for role, said in session["history"] if role == "user"]
        reply = f"[{request.session_id}] turn {len(earlier) + 1}: {text}"
        if earlier:
            reply += f" (earlier: {' / '.join(earlier)})"
        await self.say(request.session_id, reply)
        session["history"] += [["user", text], ["agent", reply]]
        session["title"] = session["title"] or text
        session["updatedAt"] = self._stamp(store)
        self._write(store)
        return PromptResponse(stop_reason="end_turn")


def announce(fifo: str) -> None:
    """Say ``ready PID`` on the pipe, keeping it open until the process ends."""
    pipe = open(fifo, "w")  # noqa: SIM115 - deliberately open for the process's lifetime
    pipe.write(f"ready {os.getpid()}\n")
    pipe.flush()
    announce.pipe = pipe  # type: ignore[attr-defined]


class StuckAgent(ScriptAgent):
    name = "stuck"

    async def initialize(self, request: InitializeRequest) -> InitializeResponse:
        if self.option("--in", "prompt") == "initialize":
            announce(self.args[0])
            await anyio.sleep_forever()
        return await super().initialize(request)

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.say(request.session_id, "working")
        announce(self.args[0])
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def cancel(self, notification: CancelNotification) -> None:
        """Ignored: this agent does not stop."""


class UsageAgent(ScriptAgent):
    name = "usage"

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.say(request.session_id, "counted.")
        if "--no-usage" in self.args:
            return PromptResponse(stop_reason="end_turn")
        cost = Cost(amount=0.0123, currency="USD") if "--cost" in self.args else None
        update = UsageUpdateSessionUpdate(used=12_345, size=200_000)
        if cost is not None:
            update = UsageUpdateSessionUpdate(used=12_345, size=200_000, cost=cost)
        await self.send(request.session_id, update)
        usage = Usage(total_tokens=1_534, input_tokens=1_200, output_tokens=334, thought_tokens=50)
        return PromptResponse(stop_reason="end_turn", usage=usage)


WORKFLOW_OPTIONS = [
    PermissionOption(option_id="allow", name="Allow once", kind="allow_once"),
    PermissionOption(option_id="always", name="Always allow", kind="allow_always"),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]

#: ``allow`` has no kind on the wire (decoded ``unknown``, so sent on without one).
ODD_KIND_OPTIONS = [
    PermissionOption.model_validate({"optionId": "allow", "name": "Go ahead"}),
    PermissionOption(option_id="reject", name="Reject", kind="reject_once"),
]


class WorkflowAgent(ScriptAgent):
    name = "workflow"

    def __init__(self, args: list[str]) -> None:
        super().__init__(args)
        self._cancelled: set[str] = set()

    async def cancel(self, notification: CancelNotification) -> None:
        self._cancelled.add(notification.session_id)

    async def _plan(self, session_id: str, first: PlanEntryStatus, second: PlanEntryStatus) -> None:
        entries = [
            PlanEntry(content="Read config.toml", priority="high", status=first),
            PlanEntry(content="Update config.toml", priority="medium", status=second),
        ]
        await self.send(session_id, PlanSessionUpdate(entries=entries))

    async def _ask(self, session_id: str, call_id: str, kind: ToolKind, title: str) -> str:
        """Start a tool call and ask permission for it; the selected option id or cancelled."""
        await self.send(
            session_id,
            ToolCallSessionUpdate(tool_call_id=call_id, title=title, kind=kind, status="pending"),
        )
        call = ToolCallUpdate(tool_call_id=call_id, kind=kind, title=title)
        options = ODD_KIND_OPTIONS if "--odd-kinds" in self.args else WORKFLOW_OPTIONS
        return await ask_permission(self, session_id, call, options)

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        session_id = request.session_id
        self._cancelled.discard(session_id)
        await self._plan(session_id, "in_progress", "pending")
        await self.say(session_id, "Looking at config.toml.")
        outcomes = [await self._ask(session_id, "edit-1", "edit", "Update config.toml")]
        if "--twice" in self.args:
            outcomes.append(await self._ask(session_id, "run-1", "execute", "Run the tests"))
        refused = next((o for o in outcomes if o not in ("allow", "always")), None)
        if refused is None:
            diff = DiffToolCallContent(
                path=f"{self.roots[session_id][0]}/config.toml",
                old_text="debug = false\n",
                new_text="debug = true\n",
            )
            await self.send(
                session_id,
                ToolCallUpdateSessionUpdate(
                    tool_call_id="edit-1", status="completed", content=[diff]
                ),
            )
            await self._plan(session_id, "completed", "completed")
            await self.say(session_id, "Permission granted: config.toml updated.")
        else:
            await self.send(
                session_id, ToolCallUpdateSessionUpdate(tool_call_id="edit-1", status="failed")
            )
            await self.say(session_id, f"Permission refused ({refused}): nothing changed.")
        cancelled = session_id in self._cancelled
        return PromptResponse(stop_reason="cancelled" if cancelled else "end_turn")


AGENTS: dict[str, type[ScriptAgent]] = {
    kind.name: kind
    for kind in (
        CrashAgent,
        CwdAgent,
        DirsAgent,
        HostileAgent,
        ModeOptionAgent,
        NoisyAgent,
        RefusalAgent,
        SignInAgent,
        SlowStartAgent,
        StoreAgent,
        StuckAgent,
        UsageAgent,
        WorkflowAgent,
    )
}
"""The agents by name."""


def main(argv: list[str]) -> None:
    """Run the agent ``argv[0]`` with the rest as its arguments."""
    if not argv or argv[0] not in AGENTS:
        sys.stderr.write(f"usage: script_agent.py {{{','.join(sorted(AGENTS))}}} [ARGS...]\n")
        sys.exit(2)
    name, args = argv[0], argv[1:]
    if name == "crash" and os.environ.get("CRASH_AT") == "start":
        sys.stderr.write("usage: crash_agent [--acp]: unknown flag\n")
        sys.stderr.flush()
        sys.exit(2)
    run_agent_stdio(AGENTS[name](args))


if __name__ == "__main__":
    main(sys.argv[1:])
