"""Several clients on one runtime and one session: attach, fan-out, questions, cursors, grace.

Every client is a real connection (the in-memory pair) to one :class:`AgentRuntime`; the
sessions, the engine and the store are shared.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import anyio
import pytest
from _agent_support import CWD, RecordingClient, scripted, text
from helpers.timeouts import TIMEOUT

from accord.agent import AgentRuntime
from accord.errors import (
    CURSOR_META_KEY,
    ConnectionClosed,
    InvalidParams,
    ResourceNotFound,
    is_cursor_rejection,
)
from accord.roles import AgentSideConnection, ClientSideConnection
from accord.schema import (
    CancelNotification,
    Implementation,
    InitializeRequest,
    LoadSessionRequest,
    NewSessionRequest,
    PromptRequest,
    PromptResponse,
    ResumeSessionRequest,
    SessionNotification,
)
from accord.store import MemorySessionStore
from accord.testing import Say, ScriptedEngine, Stream, UseTool, WaitFor, WaitForCancel
from accord.transports import memory_transport_pair

pytestmark = pytest.mark.anyio


@dataclass
class Peer:
    """One client connected to the shared runtime."""

    client: RecordingClient
    conn: ClientSideConnection

    def stream(self, session_id: str) -> list[tuple[dict[str, Any], str | None]]:
        """The session's updates with their cursors, activation announcements left out."""
        return [
            (n.update.to_wire(), (n.meta or {}).get(CURSOR_META_KEY))
            for n in self.client.notifications
            if n.session_id == session_id and not _announcement(n)
        ]

    def last_cursor(self, session_id: str) -> str:
        """The cursor of the last update received for the session."""
        cursors = [c for _, c in self.stream(session_id) if c is not None]
        return cursors[-1]

    async def new_session(self) -> str:
        with anyio.fail_after(TIMEOUT):
            response = await self.conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))
        return response.session_id

    async def resume(self, session_id: str, cursor: str | None = None) -> None:
        meta = None if cursor is None else {CURSOR_META_KEY: cursor}
        with anyio.fail_after(TIMEOUT):
            await self.conn.resume_session(
                ResumeSessionRequest(session_id=session_id, cwd=CWD, meta=meta)
            )

    async def prompt(self, session_id: str, prompt: str = "go") -> PromptResponse:
        with anyio.fail_after(TIMEOUT):
            return await self.conn.prompt(PromptRequest(session_id=session_id, prompt=text(prompt)))


Updates = list[tuple[dict[str, Any], str | None]]


def without_prompts(stream: Updates) -> Updates:
    """The stream without its ``user_message_chunk`` updates (a prompter gets none of its own)."""
    return [(u, c) for u, c in stream if u["sessionUpdate"] != "user_message_chunk"]


def prompts(stream: Updates) -> list[tuple[str, str | None]]:
    """The prompts a stream carries: their text and cursor."""
    return [
        (u["content"]["text"], c) for u, c in stream if u["sessionUpdate"] == "user_message_chunk"
    ]


def _announcement(notification: SessionNotification) -> bool:
    meta = notification.update.meta or {}
    return (meta.get("accord") or {}).get("announcement") is True


@asynccontextmanager
async def connected(
    runtime: AgentRuntime, count: int, *, clients: Sequence[RecordingClient] = ()
) -> AsyncGenerator[list[Peer]]:
    """``count`` clients connected to ``runtime`` and initialized."""
    async with AsyncExitStack() as stack:
        peers: list[Peer] = []
        for index in range(count):
            client = clients[index] if index < len(clients) else RecordingClient()
            peers.append(await _connect(stack, runtime, client))
        yield peers


async def _connect(
    stack: AsyncExitStack,
    runtime: AgentRuntime,
    client: RecordingClient,
    *,
    extended: bool = False,
    name: tuple[str, str | None] | None = None,
) -> Peer:
    agent_end, client_end = memory_transport_pair()
    await stack.enter_async_context(AgentSideConnection(runtime, agent_end))
    conn = await stack.enter_async_context(ClientSideConnection(client, client_end))
    with anyio.fail_after(TIMEOUT):
        await conn.initialize(
            InitializeRequest(
                protocol_version=1,
                client_capabilities=client.client_capabilities(),
                meta={"accord": {"events": True}} if extended else None,
                client_info=None
                if name is None
                else Implementation(name=name[0], title=name[1], version="1"),
            )
        )
    return Peer(client, conn)


def runtime_for(engine: ScriptedEngine, **options: Any) -> AgentRuntime:
    return AgentRuntime(engine, store=MemorySessionStore(), **options)


# ---------------------------------------------------------------------- fan-out


@pytest.mark.parametrize("count", [2, 10])
async def test_every_attached_client_sees_the_same_sequence(count: int) -> None:
    engine = scripted([Stream(count=40, prefix="a")], [Say("second")])
    runtime = runtime_for(engine)
    async with connected(runtime, count) as peers:
        owner = peers[0]
        session_id = await owner.new_session()
        for peer in peers[1:]:
            await peer.resume(session_id)
        assert (await owner.prompt(session_id)).stop_reason == "end_turn"
        # Any attached client may prompt.
        assert (await peers[-1].prompt(session_id)).stop_reason == "end_turn"
        expected = owner.stream(session_id)
        for peer in peers[1:]:
            await peer.client.wait_until(lambda p=peer: len(p.stream(session_id)) >= len(expected))
        assert len(expected) > 40
        assert all(cursor is not None for _, cursor in expected)
        for peer in peers[1:]:
            assert without_prompts(peer.stream(session_id)) == without_prompts(expected)
        # Each prompt reached every client but the one that sent it.
        first, second = prompts(peers[-1].stream(session_id)) + prompts(expected)
        for peer in peers[1:-1]:
            assert prompts(peer.stream(session_id)) == [first, second]
        assert prompts(expected) == [second] and prompts(peers[-1].stream(session_id)) == [first]
        assert runtime.statistics().attachments == count


async def test_a_second_prompt_from_another_client_is_busy_and_the_turn_goes_on() -> None:
    engine = scripted([WaitForCancel()])
    runtime = runtime_for(engine)
    async with connected(runtime, 2) as (a, b), anyio.create_task_group() as group:
        session_id = await a.new_session()
        await b.resume(session_id)
        results: list[str] = []
        done = anyio.Event()

        async def first() -> None:
            results.append((await a.prompt(session_id)).stop_reason)
            done.set()

        group.start_soon(first)
        await b.client.wait_until(lambda: "user_message_chunk" in b.client.kinds(session_id))
        with pytest.raises(InvalidParams) as refused:
            await b.prompt(session_id)
        assert refused.value.data["reason"] == "busy"
        # The other client may stop the turn, too.
        await b.conn.cancel(CancelNotification(session_id=session_id))
        with anyio.fail_after(TIMEOUT):
            await done.wait()
    assert results == ["cancelled"]


async def test_a_client_joining_is_told_whose_turn_is_running() -> None:
    release = anyio.Event()
    engine = scripted([Say("working"), WaitFor(release)])
    runtime = runtime_for(engine)
    async with AsyncExitStack() as stack:
        a = await _connect(stack, runtime, RecordingClient(), name=("zed", "Zed\x1b[2J"))
        b = await _connect(stack, runtime, RecordingClient())
        c = await _connect(stack, runtime, RecordingClient())
        session_id = await a.new_session()
        resume = ResumeSessionRequest(session_id=session_id, cwd=CWD)
        with anyio.fail_after(TIMEOUT):
            idle = await b.conn.resume_session(resume)
        assert idle.meta is not None and "turn" not in idle.meta["accord"]
        async with anyio.create_task_group() as group:
            group.start_soon(a.prompt, session_id)
            await b.client.wait_until(lambda: "agent_message_chunk" in b.client.kinds(session_id))
            with anyio.fail_after(TIMEOUT):
                joined = await c.conn.resume_session(resume)
            assert joined.meta is not None
            # the prompting client's title (else name), printable and on one line
            assert joined.meta["accord"]["turn"] == {"client": "Zed [2J"}
            assert joined.meta["accord"]["clients"] == 3
            release.set()


class NoticeClient(RecordingClient):
    """Also notes how many updates it had when each extension notification came."""

    def __init__(self) -> None:
        super().__init__()
        self.updates_at_notice: list[int] = []

    async def ext_notification(self, method: str, params: dict[str, Any]) -> None:
        self.updates_at_notice.append(len(self.notifications))
        await super().ext_notification(method, params)


async def test_the_other_clients_are_told_when_a_turn_starts_and_ends() -> None:
    engine = scripted([Stream(count=30, prefix="w")], [Say("second")])
    runtime = runtime_for(engine)
    clients = [NoticeClient(), NoticeClient(), NoticeClient()]
    async with AsyncExitStack() as stack:
        a = await _connect(stack, runtime, clients[0], name=("zed", "Zed"))
        b = await _connect(stack, runtime, clients[1])
        c = await _connect(stack, runtime, clients[2], name=("nvim", None))
        session_id = await a.new_session()
        await b.resume(session_id)
        await c.resume(session_id)
        await a.prompt(session_id)
        for peer in (b, c):
            await peer.client.wait_until(lambda p=peer: len(p.client.ext) == 2)
        notice = "_accord/turn"
        started = {"sessionId": session_id, "running": True, "client": "Zed"}
        # the end with the turn's stop reason (an untagged prompt: no tag)
        ended = {
            "sessionId": session_id,
            "running": False,
            "client": "Zed",
            "stopReason": "end_turn",
        }
        assert clients[0].ext == []  # the prompting client is not told
        for client in clients[1:]:
            assert client.ext == [(notice, started), (notice, ended)]
            # the end only once the turn's updates are there
            assert client.updates_at_notice[-1] == len(client.notifications)
            assert "w29" in "".join(
                str(n.update.to_wire().get("content", {}).get("text", ""))
                for n in client.notifications
            )
        # another client's turn: the others, the first one included, are told its name
        await c.prompt(session_id)
        await a.client.wait_until(lambda: len(a.client.ext) == 2)
        assert [params["client"] for _, params in a.client.ext] == ["nvim", "nvim"]
        assert [params["running"] for _, params in a.client.ext] == [True, False]


async def test_a_client_must_attach_before_it_prompts() -> None:
    runtime = runtime_for(scripted([Say("x")]))
    async with connected(runtime, 2) as (a, b):
        session_id = await a.new_session()
        with pytest.raises(ResourceNotFound):
            await b.prompt(session_id)


# ---------------------------------------------------------------------- questions


async def test_the_first_answer_wins_and_the_other_client_is_cancelled() -> None:
    engine = scripted([UseTool(title="Deploy", kind="execute", ask=True), Say("done")])
    runtime = runtime_for(engine)
    holding = RecordingClient(answers=["hold"])
    async with connected(runtime, 2, clients=[RecordingClient(), holding]) as (a, b):
        session_id = await a.new_session()
        await b.resume(session_id)
        assert (await a.prompt(session_id)).stop_reason == "end_turn"
        await b.client.wait_until(lambda: b.client.released == 1)
    assert len(a.client.permission_requests) == len(b.client.permission_requests) == 1
    assert [d.outcome for d in engine.decisions] == ["allow_once"]
    assert b.client.held == b.client.released == 1  # its question was withdrawn


async def test_under_a_race_exactly_one_answer_is_taken() -> None:
    engine = scripted([UseTool(title="Deploy", kind="execute", ask=True), Say("done")])
    runtime = runtime_for(engine)
    allow, reject = RecordingClient(), RecordingClient()
    reject.default_answer = "reject_once"
    async with connected(runtime, 2, clients=[allow, reject]) as (a, b):
        session_id = await a.new_session()
        await b.resume(session_id)
        await a.prompt(session_id)
        await b.client.wait_until(lambda: "agent_message_chunk" in b.client.kinds(session_id))
    # Both were asked and both answered at once: one decision reached the engine.
    assert len(allow.permission_requests) == len(reject.permission_requests) == 1
    assert len(engine.decisions) == 1
    assert engine.decisions[0].outcome in ("allow_once", "reject_once")
    assert (engine.tool_runs != []) == (engine.decisions[0].outcome == "allow_once")


async def test_a_client_attaching_while_a_question_is_open_is_asked_too() -> None:
    engine = scripted([UseTool(title="Deploy", kind="execute", ask=True), Say("done")])
    runtime = runtime_for(engine)
    first = RecordingClient(answers=["hold"])
    async with connected(runtime, 2, clients=[first]) as (a, b), anyio.create_task_group() as tg:
        session_id = await a.new_session()
        stops: list[str] = []
        done = anyio.Event()

        async def run() -> None:
            stops.append((await a.prompt(session_id)).stop_reason)
            done.set()

        tg.start_soon(run)
        await a.client.wait_until(lambda: a.client.held == 1)
        with anyio.fail_after(TIMEOUT):
            await b.conn.load_session(
                LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            )
        await b.client.wait_until(lambda: len(b.client.permission_requests) == 1)
        # It was asked once it had the tool call the question is about.
        assert "tool_call" in [u["sessionUpdate"] for u in b.client.seen_at_request[0]]
        with anyio.fail_after(TIMEOUT):
            await done.wait()
        await a.client.wait_until(lambda: a.client.released == 1)
    assert stops == ["end_turn"]
    assert [d.outcome for d in engine.decisions] == ["allow_once"]


# ---------------------------------------------------------------------- cursors


async def test_a_dropped_client_resumes_from_its_cursor_with_nothing_lost_or_repeated() -> None:
    more = anyio.Event()
    engine = scripted([Stream(count=10, prefix="a"), WaitFor(more), Stream(count=10, prefix="b")])
    runtime = runtime_for(engine, grace=60)
    async with anyio.create_task_group() as serving, AsyncExitStack() as stack:
        watcher = await _connect(stack, runtime, RecordingClient(), extended=True)
        session_id = await watcher.new_session()
        # The leaver is served as a network server serves each connection: runtime.serve().
        agent_end, client_end = memory_transport_pair()
        serving.start_soon(runtime.serve, agent_end)
        client = RecordingClient()
        leaver = Peer(client, ClientSideConnection(client, client_end))

        async def prompt() -> None:
            with pytest.raises(ConnectionClosed):
                await leaver.prompt(session_id)

        async with anyio.create_task_group() as prompting, leaver.conn:
            await leaver.conn.initialize(InitializeRequest(protocol_version=1))
            await leaver.resume(session_id)
            prompting.start_soon(prompt)
            await leaver.client.wait_until(
                lambda: leaver.client.kinds(session_id).count("agent_message_chunk") >= 10
            )
            before = leaver.stream(session_id)
            cursor = leaver.last_cursor(session_id)
            # The connection dropped under the prompt (no $/cancel_request was sent).
        # The leaver's connection is closed; the turn goes on and finishes, and is stored.
        more.set()
        await watcher.client.wait_until(
            lambda: watcher.client.kinds(session_id).count("agent_message_chunk") == 20
        )
        await watcher.client.wait_until(
            lambda: "turn_completed" in [e["kind"] for e in watcher.client.ext_events()]
        )
        stored = await runtime.store.read_events(session_id)
        assert [e.kind for e in stored].count("text_chunk") == 20
        assert engine.session(session_id).cancelled_turns == 0
        back = await _connect(stack, runtime, RecordingClient())
        await back.resume(session_id, cursor)
        # the watcher saw the leaver's prompt, the leaver did not; the rest is the same
        assert [text for text, _ in prompts(watcher.stream(session_id))] == ["go"]
        assert before + back.stream(session_id) == without_prompts(watcher.stream(session_id))
        assert len(watcher.stream(session_id)) > len(before)
        serving.cancel_scope.cancel()  # the leaver's serve() would wait out the grace period


async def test_a_session_outlives_the_client_that_prompted_it_and_ends_with_its_grace() -> None:
    """The session's tasks are its own (``LiveSession.start_soon``), not its prompter's
    connection's: the prompter leaves mid-turn, the other client still gets the whole turn
    and the turn's claim is still renewed past its lease; once the last client has gone and
    the grace period has passed, no task of the session is left and the claim is free."""
    more = anyio.Event()
    engine = scripted([Stream(count=10, prefix="a"), WaitFor(more), Stream(count=10, prefix="b")])
    runtime = runtime_for(engine, grace=0.3, turn_lease=0.3)
    served: list[AgentRuntime] = []

    async def serve(agent_end: Any) -> None:
        await runtime.serve(agent_end)
        served.append(runtime)

    with anyio.fail_after(TIMEOUT * 2):
        async with anyio.create_task_group() as serving:
            ends = [memory_transport_pair() for _ in range(2)]
            for agent_end, _ in ends:
                serving.start_soon(serve, agent_end)
            prompter, other = (
                Peer(client, ClientSideConnection(client, client_end))
                for client, (_, client_end) in ((RecordingClient(), e) for e in ends)
            )

            async def prompt() -> None:
                with pytest.raises(ConnectionClosed):
                    await prompter.prompt(session_id)

            async with other.conn:
                await other.conn.initialize(InitializeRequest(protocol_version=1))
                async with anyio.create_task_group() as prompting, prompter.conn:
                    await prompter.conn.initialize(InitializeRequest(protocol_version=1))
                    session_id = await prompter.new_session()
                    await other.resume(session_id)
                    prompting.start_soon(prompt)
                    await other.client.wait_until(
                        lambda: other.client.kinds(session_id).count("agent_message_chunk") >= 10
                    )
                # The prompter has gone; the turn goes on, past its claim's lease.
                live = runtime._sessions.live[session_id]
                await anyio.sleep(1.0)
                claim = await runtime.store.claim_session(session_id, "probe", lease_seconds=1)
                assert not claim.held_by("probe")
                assert live.tasks >= 2  # the other client's sender, the claim's renewal
                more.set()
                await other.client.wait_until(
                    lambda: other.client.kinds(session_id).count("agent_message_chunk") == 20
                )
            # The last client has gone: the grace period passes, the session closes.
    assert len(served) == 2  # both serve() calls returned on their own
    assert session_id not in runtime._sessions.live
    assert live.tasks == 0
    claim = await runtime.store.claim_session(session_id, "probe", lease_seconds=1)
    assert claim.held_by("probe")
    stored = await runtime.store.read_events(session_id)
    assert [e.kind for e in stored].count("text_chunk") == 20


async def test_a_session_made_live_on_a_closed_connection_goes_on_for_the_others() -> None:
    """A connection built without ``AgentRuntime.serve`` hosts the task group of the session it
    makes live; when it closes mid-turn, the group opens again for the client still attached
    (``LiveSession.host``): its sender goes on from its cursor (nothing lost, nothing twice)
    and the turn's claim is still renewed past its lease."""
    more = anyio.Event()
    engine = scripted([Stream(count=10, prefix="a"), WaitFor(more), Stream(count=10, prefix="b")])
    runtime = runtime_for(engine, turn_lease=0.3)
    opened: list[str] = []
    made_live, leave = anyio.Event(), anyio.Event()

    async def first_client() -> None:
        async with AsyncExitStack() as stack:
            first = await _connect(stack, runtime, RecordingClient())
            opened.append(await first.new_session())
            made_live.set()
            await leave.wait()  # then the connection closes

    async with connected(runtime, 1) as (other,), anyio.create_task_group() as group:
        group.start_soon(first_client)
        await made_live.wait()
        session_id = opened[0]
        await other.resume(session_id)
        live = runtime._sessions.live[session_id]

        async def prompt() -> None:
            response = await other.prompt(session_id)
            assert response.stop_reason == "end_turn"

        group.start_soon(prompt)
        with anyio.fail_after(TIMEOUT):
            await other.client.wait_until(
                lambda: other.client.kinds(session_id).count("agent_message_chunk") >= 10
            )
        leave.set()  # the host of the session's task group ends
        await anyio.sleep(1.0)
        claim = await runtime.store.claim_session(session_id, "probe", lease_seconds=1)
        assert not claim.held_by("probe")
        assert live.tasks >= 2  # the other client's sender, the claim's renewal
        more.set()
        with anyio.fail_after(TIMEOUT):
            await other.client.wait_until(
                lambda: other.client.kinds(session_id).count("agent_message_chunk") == 20
            )
        chunks = [
            u["content"]["text"]
            for u, _ in other.stream(session_id)
            if u["sessionUpdate"] == "agent_message_chunk"
        ]
        assert len(chunks) == len(set(chunks)) == 20
    await runtime.aclose()
    assert live.tasks == 0


async def test_a_cursor_that_cannot_be_honoured_is_refused_with_its_reason() -> None:
    runtime = runtime_for(scripted([Say("one")], [Say("two")]))
    async with connected(runtime, 2) as (a, b):
        session_id = await a.new_session()
        other_id = await a.new_session()
        await a.prompt(session_id)
        await a.prompt(other_id, "x")
        good = a.last_cursor(session_id)
        version, tag, epoch, seq = good.split(".")
        cases = {
            "cursor_malformed": ["nonsense", "", "1." + tag + ".0.-1", "x" * 500],
            "cursor_foreign": [a.last_cursor(other_id)],
            "cursor_unknown": [f"{version}.{tag}.{epoch}.{int(seq) + 1000}"],
            "cursor_epoch": [f"{version}.{tag}.{int(epoch) + 5}.{seq}"],
        }
        for reason, cursors in cases.items():
            for cursor in cursors:
                with pytest.raises(InvalidParams) as refused:
                    await b.resume(session_id, cursor)
                assert is_cursor_rejection(refused.value), cursor
                assert refused.value.data["reason"] == reason, cursor
        # A non-string cursor is refused too, and nothing was attached.
        with pytest.raises(InvalidParams) as refused:
            await b.conn.load_session(
                LoadSessionRequest.model_validate(
                    {
                        "sessionId": session_id,
                        "cwd": CWD,
                        "mcpServers": [],
                        "_meta": {CURSOR_META_KEY: 7},
                    }
                )
            )
        assert refused.value.data["reason"] == "cursor_malformed"
        with pytest.raises(ResourceNotFound):
            await b.prompt(session_id)
        # The good one works.
        await b.resume(session_id, f"{version}.{tag}.{epoch}.0")
        # everything after the cursor, the prompt included (b did not send it)
        assert [u["sessionUpdate"] for u, _ in b.stream(session_id)] == [
            "user_message_chunk",
            *(u["sessionUpdate"] for u, _ in a.stream(session_id)),
        ]


async def test_load_with_a_cursor_sends_only_what_came_after() -> None:
    runtime = runtime_for(scripted([Say("one")], [Say("two")]))
    async with connected(runtime, 2) as (a, b):
        session_id = await a.new_session()
        await a.prompt(session_id, "first")
        middle = a.last_cursor(session_id)
        mark = len(a.stream(session_id))
        await a.prompt(session_id, "second")
        with anyio.fail_after(TIMEOUT):
            await b.conn.load_session(
                LoadSessionRequest(
                    session_id=session_id, cwd=CWD, mcp_servers=[], meta={CURSOR_META_KEY: middle}
                )
            )
        # what came after the cursor: the second prompt (which a sent, so was not echoed to a)
        # and the turn a saw
        [(prompt, _)] = prompts(b.stream(session_id))
        assert prompt == "second"
        assert without_prompts(b.stream(session_id)) == a.stream(session_id)[mark:]


async def test_a_second_client_loading_gets_the_history_then_live_updates() -> None:
    runtime = runtime_for(scripted([Stream(count=5)], [Say("later")]))
    async with connected(runtime, 2) as (a, b):
        session_id = await a.new_session()
        await a.prompt(session_id)
        with anyio.fail_after(TIMEOUT):
            await b.conn.load_session(
                LoadSessionRequest(session_id=session_id, cwd=CWD, mcp_servers=[])
            )
        replayed = len(b.stream(session_id))
        assert 0 < replayed <= len(a.stream(session_id))
        mark = len(a.stream(session_id))
        await a.prompt(session_id, "again")
        await b.client.wait_until(
            lambda: len(b.stream(session_id)) - replayed >= len(a.stream(session_id)) - mark
        )
        live = b.stream(session_id)[replayed:]
        assert [text for text, _ in prompts(live)] == ["again"]  # a's prompt, live to b
        assert without_prompts(live) == a.stream(session_id)[mark:]
        # The replay's last cursor resumes exactly where the live stream went on.
        back = RecordingClient()
        async with connected(runtime, 1, clients=[back]) as (c,):
            await c.resume(session_id, b.stream(session_id)[replayed - 1][1])
            assert c.stream(session_id) == live


# ---------------------------------------------------------------------- slow clients


class GatedClient(RecordingClient):
    """A client that takes no update until its gate opens."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = anyio.Event()

    async def session_update(self, notification: SessionNotification) -> None:
        if not _announcement(notification):
            await self.gate.wait()
        await super().session_update(notification)


async def test_a_slow_client_does_not_hold_the_turn_back_and_catches_up() -> None:
    engine = scripted([Stream(count=600, prefix="w")])
    runtime = runtime_for(engine, attachment_queue=8)
    slow = GatedClient()
    async with connected(runtime, 2, clients=[RecordingClient(), slow]) as (fast, lagging):
        session_id = await fast.new_session()
        await lagging.resume(session_id)
        assert (await fast.prompt(session_id)).stop_reason == "end_turn"
        # The turn ended and the fast client has everything while the slow one took nothing.
        assert fast.client.kinds(session_id).count("agent_message_chunk") == 600
        assert lagging.stream(session_id) == []
        slow.gate.set()
        expected = fast.stream(session_id)
        await slow.wait_until(lambda: len(lagging.stream(session_id)) > len(expected))
        assert [text for text, _ in prompts(lagging.stream(session_id))] == ["go"]
        assert without_prompts(lagging.stream(session_id)) == expected
        fell = [
            a.statistics().fell_behind for a in runtime._sessions.live[session_id].links.values()
        ]
        assert max(fell) >= 1


# ---------------------------------------------------------------------- the grace period


async def test_a_session_left_alone_is_closed_after_the_grace_period_not_deleted() -> None:
    store = MemorySessionStore()
    runtime = AgentRuntime(scripted([Say("kept")]), store=store, grace=0.05)
    agent_end, client_end = memory_transport_pair()
    client = RecordingClient()
    session_id = ""
    with anyio.fail_after(TIMEOUT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(runtime.serve, agent_end)
            async with ClientSideConnection(client, client_end) as conn:
                await conn.initialize(InitializeRequest(protocol_version=1))
                session_id = (
                    await conn.new_session(NewSessionRequest(cwd=CWD, mcp_servers=[]))
                ).session_id
                await conn.prompt(PromptRequest(session_id=session_id, prompt=text("hi")))
                assert runtime.statistics().live_sessions == 1
        # serve() returned: the grace period passed and the session was closed.
        assert runtime.statistics().live_sessions == 0
    assert await store.get_session(session_id) is not None
    assert "turn_completed" in [e.kind for e in await store.read_events(session_id)]


async def test_a_negative_grace_is_refused() -> None:
    with pytest.raises(ValueError, match="grace"):
        AgentRuntime(scripted(), store=MemorySessionStore(), grace=-1)
    with pytest.raises(ValueError, match="grace"):
        AgentRuntime(scripted(), store=MemorySessionStore(), grace=float("nan"))
