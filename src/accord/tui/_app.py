"""``ChatApp``: the terminal UI of ``accord chat``, on the client library and nothing else.

The app starts drawing at once and connects in a worker: it builds (or spawns) the agent,
runs :func:`accord.client.connect` with the file-system and terminal host services and a
permission policy that asks through a modal, and opens the first session (new, or loaded or
resumed from ``--session``). Each session lives in a tab (:class:`~accord.tui._pane.SessionPane`);
the prompt bar sends to the session of the active tab and streams the turn
(:meth:`~accord.client.ClientSession.stream`). Every ``session/update`` (inside a turn or
not) asks the session's pane to redraw from the session's view.

Keys: Enter sends, Ctrl-C cancels the running turn (again: quits; on an idle session twice
quits), Ctrl-Q quits, Ctrl-N a new session, Ctrl-O the session picker, Ctrl-G closes the
tab's session, Ctrl-T unfolds or folds every tool card and thought, Ctrl-R (or the prompt
``/providers``) the agent's model providers where it advertises them (list, set with a masked
API key, disable: :mod:`accord.tui._providers`), Ctrl-PageUp/PageDown (or Alt-Left/Right)
switch tabs. (The prompt keeps the editing keys of Textual's text area,
Ctrl-A/E/K/U/W among them.)

The footer shows the agent's sign-in when it advertises ``auth.status`` (asked once
connected; each ``auth/status_update`` redraws it and is a notice, see :mod:`._footer`).

While a permission question waits the terminal bell rings and the window title says so.
When the agent fails to start or dies, the app shows why, with what it wrote to stderr. When
the connection to a served agent (``--agent ws://...``) drops, ``connect`` reconnects and
resumes the open sessions by itself; meanwhile the footer says ``reconnecting`` and a notice
says what happened.

Above: :mod:`accord.cli._chat`. Below: :mod:`accord.client` and the widgets of this package.
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, ClassVar, TypeVar

import anyio
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.css.query import NoMatches
from textual.screen import ModalScreen
from textual.widgets import Static, TabbedContent, TabPane

from ..client import (
    AgentSpec,
    AskCallback,
    Cancel,
    ClientSession,
    ConnectedAgent,
    ElicitationCallback,
    ElicitationContext,
    ElicitationDecision,
    PermissionContext,
    PermissionDecision,
    TerminalHost,
    TurnStream,
    accord_client_info,
    connect,
)
from ..errors import (
    AcpError,
    AgentProcessExited,
    ConnectionClosed,
    LocalProtocolError,
    RequestError,
    ResourceNotFound,
)
from ..schema import AvailableCommand, TerminalOutputRequest
from ..transports import SubprocessTransport
from ._elicitation import ElicitationScreen
from ._footer import AuthShown, StatusFooter, auth_account, turn_runner
from ._mentions import AttachmentRefused, FileIndex, prompt_blocks
from ._pane import SessionPane
from ._permission import PermissionScreen
from ._picker import PickedSession, SessionAction, SessionPicker
from ._prompt import PromptBar
from ._providers import ProviderChoice, ProviderForm, ProviderScreen
from ._safe import clean, plain, plain_line

__all__ = ("AgentSpecFactory", "ChatApp", "describe_failure")

AgentSpecFactory = Callable[[], Awaitable[AgentSpec]]
"""Builds the agent to connect to (a command line, or an in-process agent)."""
AgentCloser = Callable[[AgentSpec], Awaitable[None]]
"""Releases what the factory built, once the connection is closed."""

_Answer = TypeVar("_Answer")

#: The window title (while a question waits it says so).
CHAT_TITLE = "accord chat"
#: Seconds between two checks that a spawned agent is still there while nothing happens.
LIVENESS_INTERVAL = 0.5
#: Seconds between two redraws of the footer while nothing else redraws it.
FOOTER_INTERVAL = 0.5
#: The prompt's own command for the provider screen (offered when the agent has providers and
#: no command of that name).
PROVIDERS_COMMAND = AvailableCommand(
    name="providers", description="the agent's model providers: list, set, disable (Ctrl-R)"
)


def describe_failure(error: BaseException, stderr: str = "") -> str:
    """What went wrong with the agent, for people: the error and what it wrote to stderr."""
    if isinstance(error, AgentProcessExited):
        code = error.exit_code
        if code is None:
            lines = ["The agent exited."]
        elif code < 0:
            lines = [f"The agent was killed by signal {-code}."]
        else:
            lines = [f"The agent exited with code {code}."]
        stderr = error.stderr_tail or stderr
    elif isinstance(error, FileNotFoundError):
        lines = [f"The agent's program was not found: {error.filename or error}"]
    elif isinstance(error, TimeoutError):
        lines = [str(error)]
    else:
        lines = [f"The agent failed: {error}"]
    if stderr.strip():
        lines += ["", "What it wrote to stderr:", stderr.rstrip()]
    elif isinstance(error, AgentProcessExited):
        lines += ["", "It wrote nothing to stderr."]
    return "\n".join(lines)


def _alone(error: BaseException) -> BaseException:
    """The one exception inside nested single-member exception groups (else the group)."""
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        error = error.exceptions[0]  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return error  # pyright: ignore[reportUnknownVariableType]


class ChatApp(App[int]):
    """The ``accord chat`` application (see the module docstring)."""

    TITLE = CHAT_TITLE
    CSS = """
    Screen { layers: base overlay; }
    #tabs { height: 1fr; }
    #tabs ContentSwitcher { height: 1fr; }
    #tabs TabPane { padding: 0; height: 1fr; }
    #starting { padding: 1 2; color: $text-muted; height: 1fr; }
    #failure { padding: 1 2; color: $text-error; height: 1fr; display: none; }
    #failure.-shown { display: block; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+c", "interrupt", "Cancel / quit", priority=True),
        Binding("ctrl+q", "quit", "Quit", priority=True),
        Binding("ctrl+n", "new_session", "New session"),
        Binding("ctrl+o", "pick_session", "Sessions"),
        Binding("ctrl+g", "close_session", "Close session"),
        Binding("ctrl+t", "toggle_all", "Fold all"),
        Binding("ctrl+r", "providers", "Providers"),
        Binding("ctrl+pagedown,alt+right", "next_tab", "Next tab"),
        Binding("ctrl+pageup,alt+left", "previous_tab", "Previous tab"),
    ]

    def __init__(
        self,
        agent: AgentSpecFactory,
        *,
        agent_name: str,
        cwd: str | None = None,
        session_id: str | None = None,
        resume: bool = False,
        close_agent: AgentCloser | None = None,
    ) -> None:
        super().__init__()
        self._agent_factory = agent
        self._close_agent = close_agent
        self.agent_name = agent_name
        self.cwd = os.path.abspath(cwd or os.getcwd())
        self._initial_session = session_id
        self._resume = resume
        self.connection: ConnectedAgent | None = None
        self._terminals = TerminalHost()
        self._panes: dict[str, SessionPane] = {}
        self._files = FileIndex(self.cwd)
        self._quit_event = anyio.Event()
        self._quit_armed = False
        self._failed = False
        #: Permission questions waiting for an answer.
        self.questions_waiting = 0
        self._questions: list[ModalScreen[Any]] = []
        # Panes to redraw at the next turn of the event loop (an ordered set).
        self._stale_panes: dict[SessionPane, None] = {}
        #: What the connection to a served agent last said (it dropped, or is back).
        self.connection_status: str | None = None
        self._reconnecting = False
        self._refresh_scheduled = False
        #: Bells rung (for questions), counted so headless tests can see them.
        self.bells = 0
        #: The turn results, per session id (the last one), for callers and tests.
        self.last_stop_reason: dict[str, str] = {}
        self._started = anyio.Event()
        #: The agent's sign-in as last reported (``auth/status``, ``auth/status_update``;
        #: ``None``: the agent does not report it).
        self.auth: AuthShown | None = None

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Static(plain(f"Starting {self.agent_name}…"), id="starting")
        yield Static("", id="failure")
        yield TabbedContent(id="tabs")
        yield PromptBar(id="prompt-bar")
        yield StatusFooter(id="footer")

    def on_mount(self) -> None:
        self.query_one("#tabs", TabbedContent).display = False
        bar = self.query_one(PromptBar)
        bar.area.commands = self._commands
        bar.area.files = self._files
        bar.accepts_images = self._accepts_images
        bar.area.focus()
        self._update_footer()
        # Another client's turn starting or ending (an accord agent's ``_accord/turn``) is no
        # session/update, so nothing else redraws the footer for it.
        self.set_interval(FOOTER_INTERVAL, self._update_footer, name="footer")
        self.call_after_refresh(self._connect)

    @property
    def ready(self) -> anyio.Event:
        """Set once the first session is open (or the agent failed to start)."""
        return self._started

    @property
    def active_pane(self) -> SessionPane | None:
        """The pane of the active tab."""
        tabs = self.query_one("#tabs", TabbedContent)
        pane_id = tabs.active
        if not pane_id:
            return None
        for pane in self._panes.values():
            if pane.parent is not None and pane.parent.id == pane_id:
                return pane
        return None

    @property
    def failed(self) -> bool:
        """Whether the agent failed to start, or died."""
        return self._failed

    @property
    def panes(self) -> tuple[SessionPane, ...]:
        """Every open session's pane, in the order they were opened."""
        return tuple(self._panes.values())

    # ------------------------------------------------------------------ connection

    def _connect(self) -> None:
        self.run_worker(self._run_connection(), name="connection", exit_on_error=False)

    async def _run_connection(self) -> None:
        spec: AgentSpec | None = None
        try:
            spec = await self._agent_factory()
            async with (
                self._terminals,
                connect(
                    spec,
                    cwd=self.cwd,
                    fs=True,
                    terminals=self._terminals,
                    permission_policy=AskCallback(self._ask_permission),
                    elicitation_policy=ElicitationCallback(self._ask_elicitation),
                    update_listener=self._session_updated,
                    client_info=accord_client_info("accord chat"),
                    on_status=self._connection_status,
                ) as connection,
            ):
                self.connection = connection
                if connection.supports("auth", "status"):
                    self.run_worker(self._follow_auth(connection), name="auth", exit_on_error=False)
                await self._open_first_session(connection)
                self._started.set()
                await self._watch(connection)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as error:
            self._show_failure(_alone(error))
        finally:
            self._started.set()
            if spec is not None and self._close_agent is not None:
                with anyio.CancelScope(shield=True):
                    await self._close_agent(spec)

    async def _watch(self, connection: ConnectedAgent) -> None:
        """Wait for the app to close; notice a spawned agent that dies in between."""
        while not self._quit_event.is_set():
            with anyio.move_on_after(LIVENESS_INTERVAL):
                await self._quit_event.wait()
            if connection.closed and not self._quit_event.is_set():
                transport = connection.transport
                if isinstance(transport, SubprocessTransport) and transport.returncode is not None:
                    raise AgentProcessExited(transport.returncode, transport.stderr_tail())
                raise ConnectionClosed("the connection to the agent closed")

    async def _follow_auth(self, connection: ConnectedAgent) -> None:
        """Show the agent's sign-in (``auth/status``) in the footer, and each change the
        agent reports (``auth/status_update``) in a notice too."""
        seen = connection.auth_updates
        try:
            status = await connection.auth_status()
        except (AcpError, ConnectionClosed):
            return  # refused, or gone: the footer says nothing of it
        if connection.auth_updates == seen:
            self._show_auth(status.state, auth_account(status.accounts))
        while True:
            update = await connection.wait_auth_update(after=seen)
            seen = connection.auth_updates
            self._show_auth(update.state, auth_account(update.accounts), notice=True)

    def _show_auth(self, state: str, label: str | None, *, notice: bool = False) -> None:
        self.auth = (state, label)
        self._update_footer()
        if not notice:
            return
        if state == "authenticated":
            said = "Signed in" if label is None else f"Signed in: {label}"
            self.notify(clean(" ".join(said.split())))
        elif state == "unauthenticated":
            self.notify("Signed out: the agent needs a sign-in", severity="warning")

    def _connection_status(self, line: str) -> None:
        """A served agent's connection dropped, or is back (``connect`` reconnects by
        itself and resumes the open sessions): say so in a notice and in the footer."""
        self.connection_status = line
        self._reconnecting = not line.startswith("reconnected")
        self.notify(clean(line), severity="warning" if self._reconnecting else "information")
        self._update_footer()

    @property
    def reconnecting(self) -> bool:
        """Whether the connection to a served agent dropped and is not back yet."""
        return self._reconnecting

    def _stderr(self) -> str:
        connection = self.connection
        if connection is not None and isinstance(connection.transport, SubprocessTransport):
            return connection.transport.stderr_tail()
        return ""

    def _show_failure(self, error: BaseException) -> None:
        if self._failed:
            return
        self._failed = True
        text = describe_failure(error, self._stderr())
        failure = self.query_one("#failure", Static)
        failure.update(plain(text))
        failure.add_class("-shown")
        self.query_one("#starting").display = False
        self.query_one("#tabs").display = False
        self._update_footer("failed")

    async def _open_first_session(self, connection: ConnectedAgent) -> None:
        if self._initial_session is None:
            session = await connection.new_session(self.cwd)
        elif self._resume:
            session = await connection.resume_session(self._initial_session, self.cwd)
        else:
            session = await connection.load_session(self._initial_session, self.cwd)
        await self.add_session(session)

    async def add_session(self, session: ClientSession) -> SessionPane:
        """Show ``session`` in a new tab and make it the active one."""
        pane = SessionPane(session, terminals=self._read_terminal)
        self._panes[session.session_id] = pane
        tabs = self.query_one("#tabs", TabbedContent)
        self.query_one("#starting").display = False
        tabs.display = True
        number = len(self._panes)
        tab = TabPane(self._tab_title(session), pane, id=f"session-{number}")
        await tabs.add_pane(tab)
        tabs.active = tab.id or ""
        self._update_footer()
        return pane

    def _tab_title(self, session: ClientSession) -> str:
        title = session.view.title or session.session_id
        title = clean(" ".join(title.split()))
        if len(title) > 24:
            title = title[:23] + "…"
        # Tab labels are markup: escape it.
        return title.replace("[", "\\[")

    def _session_updated(self, notification: object) -> None:
        session_id = getattr(notification, "session_id", None)
        pane = self._panes.get(session_id) if isinstance(session_id, str) else None
        if pane is not None:
            self._mark_stale(pane)

    def _mark_stale(self, pane: SessionPane) -> None:
        """Redraw ``pane`` soon: any number of updates before that cost one redraw.

        A reply streams as thousands of updates; one callback per update would queue
        thousands of redraws behind the stream (the screen would trail it by seconds).
        """
        self._stale_panes[pane] = None
        if not self._refresh_scheduled:
            self._refresh_scheduled = True
            self.call_later(self._refresh_stale)

    def _refresh_stale(self) -> None:
        self._refresh_scheduled = False
        panes, self._stale_panes = self._stale_panes, {}
        for pane in panes:
            if pane.session.session_id in self._panes:
                self._refresh_pane(pane)

    def _refresh_pane(self, pane: SessionPane) -> None:
        pane.request_refresh()
        if pane is self.active_pane:
            self._update_footer()
        tab = pane.parent
        if isinstance(tab, TabPane) and tab.id:
            tabs = self.query_one("#tabs", TabbedContent)
            label = self._tab_title(pane.session)
            tab_widget = tabs.get_tab(tab.id)
            if str(tab_widget.label) != label:
                tab_widget.label = label

    async def _read_terminal(self, terminal_id: str) -> str | None:
        pane = self.active_pane
        if pane is None:
            return None
        for session_id in self._panes:
            try:
                response = await self._terminals.terminal_output(
                    TerminalOutputRequest(session_id=session_id, terminal_id=terminal_id)
                )
            except (ResourceNotFound, RequestError):
                continue
            return response.output
        return None

    # ------------------------------------------------------------------ prompts and turns

    def _commands(self) -> Sequence[AvailableCommand]:
        pane = self.active_pane
        commands = list(pane.session.view.available_commands) if pane is not None else []
        if self._providers_command(commands):
            commands.append(PROVIDERS_COMMAND)
        return commands

    def _providers_command(self, commands: Sequence[AvailableCommand]) -> bool:
        """Whether ``/providers`` is the chat's own command (not one the agent has)."""
        connection = self.connection
        return (
            connection is not None
            and connection.supports("providers")
            and all(c.name != PROVIDERS_COMMAND.name for c in commands)
        )

    def _accepts_images(self) -> bool:
        connection = self.connection
        if connection is None:
            return False
        return bool(connection.agent_capabilities.prompt_capabilities.image)

    @on(PromptBar.Submitted)
    async def _submitted(self, event: PromptBar.Submitted) -> None:
        pane = self.active_pane
        connection = self.connection
        if pane is None or connection is None:
            self.notify("The agent is not ready yet.", severity="warning")
            return
        session = pane.session
        if event.text.strip() == f"/{PROVIDERS_COMMAND.name}" and not any(
            c.name == PROVIDERS_COMMAND.name for c in session.view.available_commands
        ):
            self.action_providers()
            return
        if session.state != "idle":
            self.notify("A turn is running: wait for it, or Ctrl-C to cancel it.")
            return
        capabilities = connection.agent_capabilities.prompt_capabilities
        try:
            blocks = prompt_blocks(event.text, session.roots, capabilities, event.images)
            stream = session.stream(blocks)
        except (AttachmentRefused, LocalProtocolError) as refusal:
            self.notify(str(refusal), severity="error")
            return
        self._quit_armed = False
        pane.request_refresh()
        self._update_footer()
        self.run_worker(self._follow_turn(pane, stream), name="turn", exit_on_error=False)

    async def _follow_turn(self, pane: SessionPane, stream: TurnStream) -> None:
        session = pane.session
        # One signal redraws the pane: the update listener (``_session_updated``), for this
        # turn's updates as for any other's; the turn's own events are not read.
        try:
            async with stream:
                result = await stream.wait_finished()
            self.last_stop_reason[session.session_id] = result.stop_reason
            self._mark_stale(pane)
        except (AgentProcessExited, ConnectionClosed) as error:
            await pane.conversation.add_notice(describe_failure(error, self._stderr()), error=True)
            self._show_failure(error)
            return
        except (RequestError, AcpError) as error:
            await pane.conversation.add_notice(
                f"The agent answered with an error: {error}", error=True
            )
        else:
            reason = self.last_stop_reason.get(session.session_id)
            if reason and reason != "end_turn":
                await pane.conversation.add_notice(f"Turn ended: {reason.replace('_', ' ')}")
        finally:
            self._update_footer()

    # ------------------------------------------------------------------ permission questions

    async def _ask_permission(self, context: PermissionContext) -> PermissionDecision:
        pane = self._panes.get(context.session_id)
        if pane is not None:
            await pane.conversation.flush()  # the tool call asked about, drawn under the modal
        screen = PermissionScreen(context, cwd=pane.session.cwd if pane else self.cwd)
        decision: PermissionDecision = await self._ask(screen, Cancel())
        return decision

    async def _ask_elicitation(self, context: ElicitationContext) -> ElicitationDecision:
        pane = self._panes.get(context.session_id) if context.session_id else None
        if pane is not None:
            await pane.conversation.flush()
        return await self._ask(ElicitationScreen(context), Cancel())

    async def _ask(self, screen: ModalScreen[_Answer], unanswered: _Answer) -> _Answer:
        """Show a question's modal until it is answered (rings, retitles while it waits)."""
        answered = anyio.Event()
        answer: list[_Answer] = [unanswered]

        def done(result: _Answer | None) -> None:
            if result is not None:
                answer[0] = result
            answered.set()

        self.questions_waiting += 1
        try:
            # Awaiting the push waits until the modal has composed and mounted: only then is
            # the question on screen, announced, and offered to callers as ``question``.
            await self.push_screen(screen, done)
            if not answered.is_set():
                self._questions.append(screen)
                self._announce_question()
            await answered.wait()
        finally:
            self.questions_waiting -= 1
            if screen in self._questions:
                self._questions.remove(screen)
                self._announce_question()
            if not answered.is_set() and screen.is_attached:
                screen.dismiss(unanswered)
        return answer[0]

    @property
    def question(self) -> ModalScreen[Any] | None:
        """The question on screen (a permission or elicitation modal, drawn and waiting for
        its answer), or ``None``. Set only once the modal has composed, so what it shows can
        be read as soon as this is set."""
        return self._questions[-1] if self._questions else None

    def _announce_question(self) -> None:
        waiting = len(self._questions)
        self.sub_title = "permission asked" if waiting else ""
        title = f"(?) {CHAT_TITLE}: the agent asks permission" if waiting else CHAT_TITLE
        self.title = title
        self._set_terminal_title(title)
        if waiting:
            self.bells += 1
            self.bell()

    def _set_terminal_title(self, title: str) -> None:
        driver = self._driver
        if driver is not None and not self.is_headless:
            driver.write(f"\x1b]2;{clean(title)}\x07")

    # ------------------------------------------------------------------ actions

    async def action_interrupt(self) -> None:
        """Cancel the running turn; quit when nothing runs and Ctrl-C was pressed before."""
        pane = self.active_pane
        if pane is not None and pane.session.state == "running":
            self._quit_armed = True
            self.notify("Cancelling the turn (Ctrl-C again quits).")
            await pane.session.cancel()
            self._update_footer()
            return
        if self._quit_armed or pane is None:
            self.exit(0)
            return
        self._quit_armed = True
        self.notify("Press Ctrl-C again to quit.")

    async def action_quit(self) -> None:
        """Quit (turns are cancelled as the connection closes)."""
        self.exit(0)

    async def action_new_session(self) -> None:
        """Open a new session in a new tab."""
        connection = self.connection
        if connection is None:
            return
        try:
            session = await connection.new_session(self.cwd)
        except AcpError as error:
            self.notify(f"The agent refused a new session: {error}", severity="error")
            return
        await self.add_session(session)

    @work(exclusive=True, group="picker")
    async def action_pick_session(self) -> None:
        """List the agent's sessions and act on the one picked."""
        connection = self.connection
        if connection is None:
            return
        if not connection.supports("sessionCapabilities", "list"):
            self.notify("The agent does not list its sessions.", severity="warning")
            return
        try:
            sessions = [info async for info in connection.iter_sessions()]
        except AcpError as error:
            self.notify(f"Could not list sessions: {error}", severity="error")
            return
        actions: set[SessionAction] = set()
        if connection.supports("loadSession"):
            actions.add("load")
        optional: tuple[SessionAction, ...] = ("resume", "fork", "delete")
        for action in optional:
            if connection.supports("sessionCapabilities", action):
                actions.add(action)
        picker = SessionPicker(
            sessions, actions=frozenset(actions), open_ids=frozenset(self._panes)
        )
        picked = await self.push_screen_wait(picker)
        if picked is not None:
            await self._act_on(connection, picked)

    async def _act_on(self, connection: ConnectedAgent, picked: PickedSession) -> None:
        info = picked.session
        try:
            if picked.action == "new" or info is None:
                await self.action_new_session()
                return
            if picked.action == "delete":
                if info.session_id in self._panes:
                    await self._close_pane(self._panes[info.session_id])
                await connection.delete_session(info.session_id)
                self.notify("Session deleted.")
                return
            if info.session_id in self._panes and picked.action != "fork":
                self._activate(self._panes[info.session_id])
                return
            cwd = info.cwd or self.cwd
            if picked.action == "load":
                session = await connection.load_session(info.session_id, cwd)
            elif picked.action == "resume":
                session = await connection.resume_session(info.session_id, cwd)
            else:
                session = await connection.fork_session(info.session_id, cwd)
        except AcpError as error:
            self.notify(f"The agent refused to {picked.action}: {error}", severity="error")
            return
        await self.add_session(session)

    @work(exclusive=True, group="providers")
    async def action_providers(self) -> None:
        """Show the agent's model providers; set or disable the one picked, then show again."""
        connection = self.connection
        if connection is None:
            return
        if not connection.supports("providers"):
            self.notify(
                "The agent does not offer provider configuration (no providers capability).",
                severity="warning",
            )
            return
        while True:
            try:
                providers = await connection.list_providers()
            except AcpError as error:
                self.notify(
                    f"Could not list the providers: {clean(str(error))}",
                    severity="error",
                    markup=False,
                )
                return
            choice = await self.push_screen_wait(ProviderScreen(providers))
            if choice is None:
                return
            await self._provider_act(connection, choice)

    async def _provider_act(self, connection: ConnectedAgent, choice: ProviderChoice) -> None:
        name = plain_line_text(choice.provider.provider_id)
        if choice.action == "disable":
            try:
                await connection.disable_provider(choice.provider.provider_id)
            except AcpError as error:
                self.notify(
                    f"The agent refused: {clean(str(error))}", severity="error", markup=False
                )
                return
            self.notify(f"Provider {name} disabled.", markup=False)
            return
        setting = await self.push_screen_wait(ProviderForm(choice.provider))
        if setting is None:
            return
        try:
            await connection.set_provider(
                choice.provider.provider_id,
                api_type=setting.api_type,
                base_url=setting.base_url,
                api_key=setting.api_key,
            )
        except AcpError as error:
            # the agent's refusal names a header, never its value (the key)
            self.notify(f"The agent refused: {clean(str(error))}", severity="error", markup=False)
            return
        sent = " (key sent)" if setting.api_key is not None else ""
        route = plain_line_text(f"{setting.api_type} at {setting.base_url}")
        self.notify(f"Provider {name}: {route}{sent}; new sessions use it.", markup=False)

    def _activate(self, pane: SessionPane) -> None:
        tab = pane.parent
        if isinstance(tab, TabPane) and tab.id:
            self.query_one("#tabs", TabbedContent).active = tab.id

    async def action_close_session(self) -> None:
        """Close the active tab's session."""
        pane = self.active_pane
        if pane is not None:
            await self._close_pane(pane)

    async def _close_pane(self, pane: SessionPane) -> None:
        session = pane.session
        try:
            if session.state == "running":
                await session.cancel()
            await session.close()
        except AcpError as error:
            self.notify(f"Closing the session failed: {error}", severity="error")
        del self._panes[session.session_id]
        tab = pane.parent
        if isinstance(tab, TabPane) and tab.id:
            await self.query_one("#tabs", TabbedContent).remove_pane(tab.id)
        self._update_footer()

    def action_toggle_all(self) -> None:
        """Unfold or fold every tool card and thought of the active session."""
        pane = self.active_pane
        if pane is not None:
            pane.conversation.set_expanded(not pane.conversation.expanded)

    def action_next_tab(self) -> None:
        """Switch to the next session's tab."""
        self._switch_tab(1)

    def action_previous_tab(self) -> None:
        """Switch to the previous session's tab."""
        self._switch_tab(-1)

    def _switch_tab(self, step: int) -> None:
        panes = list(self._panes.values())
        active = self.active_pane
        if not panes or active is None:
            return
        self._activate(panes[(panes.index(active) + step) % len(panes)])

    @on(TabbedContent.TabActivated)
    def _tab_changed(self) -> None:
        self._update_footer()

    @on(SessionPane.SetupChanged)
    def _setup_changed(self) -> None:
        self._update_footer()

    def _update_footer(self, state: str | None = None) -> None:
        try:
            pane = self.active_pane
            footer = self.query_one(StatusFooter)
            area = self.query_one(PromptBar).area
        except NoMatches:
            # The footer's timer can tick while the app shuts down and its widgets are gone.
            return
        if state is None:
            if self._failed:
                state = "failed"
            elif self._reconnecting:
                state = "reconnecting"
            elif pane is None:
                state = "starting"
            else:
                state = pane.session.state
        view = pane.session.view if pane else None
        footer.show_status(view, state, self.agent_name, self.auth)
        # The prompt says who runs the turn this client joined (its own prompt waits for it).
        runner = turn_runner(view)
        placeholder = "" if runner is None else " ".join(clean(runner).split())
        if placeholder:
            placeholder += " is running a turn"
        if area.placeholder != placeholder:
            area.placeholder = placeholder

    async def on_unmount(self) -> None:
        self._quit_event.set()


def plain_line_text(text: str) -> str:
    """``text`` on one line, without escape sequences (for a notice)."""
    return plain_line(text).plain
