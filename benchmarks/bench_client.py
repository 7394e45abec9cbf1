"""Client runtime benchmark: accord's client against the official Python SDK's, over real pipes.

Both clients drive the same agent process, ``_stream_agent.py`` (stdlib + orjson, writing
pre-encoded notifications in large writes, so that the client is the bottleneck). Measured
in one run:

(a) a turn of N ``agent_message_chunk`` notifications (~40 bytes of text each) received by
    accord's client runtime, with ``session.prompt(...)`` (updates folded into the session's
    view) and with ``session.stream(...)`` (each event also handed to a reader); by accord's
    typed protocol layer (``accord.roles.ClientSideConnection`` with a ``Client`` whose
    ``session_update`` counts: the same layer and the same work as the SDK's client); and by
    the SDK's client (``acp.spawn_agent_process`` with a ``session_update`` that counts):
    messages/s (wall time from sending the prompt until its answer is in hand *and* every
    update has been handled) and client CPU microseconds per message (``time.process_time()``
    over the same span). Each turn runs on a fresh session after a warm-up turn; the rounds
    interleave the three clients; medians are reported. The SDK handles each notification
    in a task of its own, so some may still be unhandled when the prompt returns: how many had
    been handled then is reported.
(b) the memory a ``SessionView`` holds for a session of E events (a realistic mix: text
    chunks of many messages, thoughts, tool calls with their updates, plans, usage), measured
    with tracemalloc around decoding, validating and folding the updates into a fresh view,
    after the updates themselves are dropped (what the view keeps of them is counted). For
    reference: the same notifications parsed by the SDK and kept in a list.

Run: ``python benchmarks/bench_client.py [--messages 20000] [--rounds 5] [--events 10000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import orjson

HERE = Path(__file__).resolve().parent
AGENT = [sys.executable, str(HERE / "_stream_agent.py")]
sys.path.insert(0, str(HERE))

from _timing import compile_accord  # noqa: E402

WARMUP_MESSAGES = 2_000
SDK_DRAIN_TIMEOUT = 30.0


@dataclass
class Turns:
    """The measured turns of one client."""

    name: str
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    agent_cpu: list[float] = field(default_factory=list)
    at_answer: list[int] = field(default_factory=list)  # updates handled when prompt returned
    received: list[int] = field(default_factory=list)  # updates handled in the end

    def add(self, wall: float, cpu: float, agent_cpu: float, at_answer: int, got: int) -> None:
        self.wall.append(wall)
        self.cpu.append(cpu)
        self.agent_cpu.append(agent_cpu)
        self.at_answer.append(at_answer)
        self.received.append(got)


# ---------------------------------------------------------------------- accord client


class AccordClient:
    """accord's client runtime: ``connect`` to the agent, one fresh session per turn."""

    def __init__(self) -> None:
        self.prompted = Turns("accord prompt()")
        self.streamed = Turns("accord stream()")
        self._conn: Any = None

    async def open(self, stack: AsyncExitStack) -> None:
        from accord.client import connect

        self._conn = await stack.enter_async_context(connect(AGENT))
        await self._prompt_turn(WARMUP_MESSAGES, None)
        await self._stream_turn(WARMUP_MESSAGES, None)

    async def _prompt_turn(self, messages: int, into: Turns | None) -> None:
        session = await self._conn.new_session()
        gc.collect()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        result = await session.prompt(str(messages))
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        got = session.view.updates_applied
        assert len(result.text) == 40 * got, (len(result.text), got)
        if into is not None:
            agent_cpu = (result.response.meta or {})["cpu"]
            into.add(wall, cpu, agent_cpu, got, got)
        await session.close()

    async def _stream_turn(self, messages: int, into: Turns | None) -> None:
        from accord.client import TextDelta, TurnFinished

        session = await self._conn.new_session()
        gc.collect()
        deltas = 0
        finished: TurnFinished | None = None
        cpu0, wall0 = time.process_time(), time.perf_counter()
        stream = session.stream(str(messages))
        async for event in stream:
            if isinstance(event, TextDelta):
                deltas += 1
            elif isinstance(event, TurnFinished):
                finished = event
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        assert finished is not None and finished.stop_reason == "end_turn"
        assert session.view.updates_applied == deltas, (session.view.updates_applied, deltas)
        assert len(session.view.messages[-1].text) == 40 * deltas
        if into is not None:
            assert stream.result is not None
            agent_cpu = (stream.result.response.meta or {})["cpu"]
            into.add(wall, cpu, agent_cpu, deltas, deltas)
        await session.close()

    async def round(self, messages: int) -> None:
        await self._prompt_turn(messages, self.prompted)
        await self._stream_turn(messages, self.streamed)


class RoleClient:
    """accord's typed protocol layer: a ``Client`` that counts, as the SDK's client does."""

    def __init__(self) -> None:
        self.turns = Turns("accord Client role")
        self._conn: Any = None
        self._session_id = ""

    async def open(self, stack: AsyncExitStack) -> None:
        from accord.roles import Client, ClientSideConnection
        from accord.schema import SessionNotification
        from accord.transports import spawn_agent

        class CountingClient(Client):
            count = 0

            async def session_update(self, notification: SessionNotification) -> None:
                self.count += 1

        self._client = CountingClient()
        transport = await stack.enter_async_context(spawn_agent(AGENT))
        self._conn = await stack.enter_async_context(ClientSideConnection(self._client, transport))
        await self._conn.initialize()
        await self._turn(WARMUP_MESSAGES, None)

    async def _turn(self, messages: int, into: Turns | None) -> None:
        from accord.schema import NewSessionRequest, PromptRequest, TextContentBlock

        session = await self._conn.new_session(NewSessionRequest(cwd=os.getcwd(), mcp_servers=[]))
        request = PromptRequest(
            session_id=session.session_id, prompt=[TextContentBlock(text=str(messages))]
        )
        self._client.count = 0
        gc.collect()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        response = await self._conn.prompt(request)
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        got = self._client.count
        if into is not None:
            into.add(wall, cpu, (response.meta or {})["cpu"], got, got)

    async def round(self, messages: int) -> None:
        await self._turn(messages, self.turns)


# ---------------------------------------------------------------------- official SDK client


class SdkClient:
    """The official SDK's client: ``spawn_agent_process`` with a counting ``session_update``.

    The SDK opens an OpenTelemetry span around every message it handles when
    ``opentelemetry-api`` is importable (here it is, pulled in by pydantic-ai; no tracer
    provider is configured, so the spans are no-ops). With ``telemetry=False`` the turns run
    as with an install without it (``acp.telemetry.TRACER`` set to None meanwhile).
    """

    def __init__(self, *, telemetry: bool) -> None:
        self.telemetry = telemetry
        label = "SDK 0.12.1" if telemetry else "SDK 0.12.1, no otel"
        self.turns = Turns(label)
        self._conn: Any = None
        self._count = 0
        self._target = 0
        self._all_in = asyncio.Event()

    # The SDK's Client protocol (only what this agent uses).
    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self._count += 1
        if self._count == self._target:
            self._all_in.set()

    async def request_permission(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError

    def on_connect(self, conn: Any) -> None:
        pass

    async def open(self, stack: AsyncExitStack) -> None:
        import acp

        self._conn, _process = await stack.enter_async_context(
            acp.spawn_agent_process(self, *AGENT)
        )
        await self._conn.initialize(protocol_version=1)
        await self._turn(WARMUP_MESSAGES, None)

    async def _turn(self, messages: int, into: Turns | None) -> None:
        from acp import schema

        session = await self._conn.new_session(cwd=os.getcwd(), mcp_servers=[])
        self._count, self._target = 0, messages
        self._all_in = asyncio.Event()
        gc.collect()
        cpu0, wall0 = time.process_time(), time.perf_counter()
        response = await self._conn.prompt(
            prompt=[schema.TextContentBlock(type="text", text=str(messages))],
            session_id=session.session_id,
        )
        at_answer = self._count
        if at_answer < messages:
            with anyio.move_on_after(SDK_DRAIN_TIMEOUT):
                await self._all_in.wait()
        wall = time.perf_counter() - wall0
        cpu = time.process_time() - cpu0
        if into is not None:
            agent_cpu = (response.field_meta or {})["cpu"]
            into.add(wall, cpu, agent_cpu, at_answer, self._count)

    async def round(self, messages: int) -> None:
        import acp.telemetry

        tracer = acp.telemetry.TRACER
        if not self.telemetry:
            acp.telemetry.TRACER = None
        try:
            await self._turn(messages, self.turns)
        finally:
            acp.telemetry.TRACER = tracer


# ---------------------------------------------------------------------- (b) SessionView memory


def _session_lines(events: int) -> list[bytes]:
    """The ``session/update`` lines of a realistic session of ``events`` updates.

    Per turn of 200 events: the user's prompt, a thought streamed in 30 chunks, a plan of
    5 entries, 10 tool calls (announced, in progress, completed with ~600 bytes of output),
    the answer streamed in 136 chunks over two messages (before and after the tools), usage.
    Chunk texts vary (no two turns share strings).
    """
    updates: list[dict[str, Any]] = []
    turn = 0
    while len(updates) < events:
        turn += 1
        t = f"turn {turn}"
        updates.append(
            {
                "sessionUpdate": "user_message_chunk",
                "content": {"type": "text", "text": f"{t}: please refactor module {turn} " * 6},
                "messageId": f"u{turn}",
            }
        )
        for i in range(30):
            text = f"[{t}.{i}] considering the options "
            updates.append(
                {
                    "sessionUpdate": "agent_thought_chunk",
                    "content": {"type": "text", "text": text},
                    "messageId": f"t{turn}",
                }
            )
        entries = [
            {"content": f"{t}: step {i} of the plan", "priority": "medium", "status": "pending"}
            for i in range(5)
        ]
        updates.append({"sessionUpdate": "plan", "entries": entries})
        for i in range(68):
            text = f"[{t}.a{i}] streamed answer text "
            updates.append(
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text},
                    "messageId": f"a{turn}",
                }
            )
        for i in range(10):
            call = f"call_{turn}_{i}"
            path = f"/work/project/src/module_{turn}/file_{i}.py"
            updates.append(
                {
                    "sessionUpdate": "tool_call",
                    "toolCallId": call,
                    "title": f"Read {path}",
                    "kind": "read",
                    "status": "pending",
                    "rawInput": {"path": path, "limit": 200},
                    "locations": [{"path": path, "line": 1}],
                }
            )
            updates.append(
                {"sessionUpdate": "tool_call_update", "toolCallId": call, "status": "in_progress"}
            )
            output = f"# {path}\n" + f"def function_{i}(x):\n    return x * {turn}\n" * 16
            updates.append(
                {
                    "sessionUpdate": "tool_call_update",
                    "toolCallId": call,
                    "status": "completed",
                    "content": [{"type": "content", "content": {"type": "text", "text": output}}],
                }
            )
        for i in range(68):
            text = f"[{t}.b{i}] streamed answer text "
            updates.append(
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": text},
                    "messageId": f"b{turn}",
                }
            )
        updates.append({"sessionUpdate": "usage_update", "used": 1000 * turn, "size": 200_000})
    return [
        orjson.dumps(
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {"sessionId": "mem", "update": update},
            }
        )
        for update in updates[:events]
    ]


@dataclass
class Memory:
    events: int
    wire_bytes: int
    text_bytes: int
    view_bytes: int
    view_peak: int
    sdk_list_bytes: int
    kinds: dict[str, int]
    messages: int
    tool_calls: int


def _traced(build: Callable[[], Any]) -> tuple[int, int]:
    """Bytes still allocated (and peak) after ``build()``, whose result is kept alive."""
    gc.collect()
    tracemalloc.start()
    kept = build()
    gc.collect()
    current, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return current, peak


def bench_memory(events: int) -> Memory:
    import acp.schema

    from accord.client import SessionView
    from accord.schema import SessionNotification

    lines = _session_lines(events)

    def fold(batch: list[bytes]) -> SessionView:
        view = SessionView("mem")
        for line in batch:
            notification = SessionNotification.model_validate(orjson.loads(line)["params"])
            view.apply(notification.update)
        return view

    def sdk_list(batch: list[bytes]) -> list[Any]:
        model = acp.schema.SessionNotification
        return [model.model_validate(orjson.loads(line)["params"]) for line in batch]

    fold(_session_lines(400))  # warm up one-time caches outside the trace
    sdk_list(_session_lines(400))
    view_bytes, view_peak = _traced(lambda: fold(lines))
    sdk_bytes, _ = _traced(lambda: sdk_list(lines))
    view = fold(lines)
    assert view.updates_applied == events
    kinds: dict[str, int] = {}
    text_bytes = 0
    for line in lines:
        update = orjson.loads(line)["params"]["update"]
        kind = update["sessionUpdate"]
        kinds[kind] = kinds.get(kind, 0) + 1
        content = update.get("content")
        if isinstance(content, dict):
            text_bytes += len(content.get("text", ""))
        elif isinstance(content, list):
            text_bytes += sum(len(c["content"]["text"]) for c in content)
    return Memory(
        events=events,
        wire_bytes=sum(len(line) + 1 for line in lines),
        text_bytes=text_bytes,
        view_bytes=view_bytes,
        view_peak=view_peak,
        sdk_list_bytes=sdk_bytes,
        kinds=kinds,
        messages=len(view.messages),
        tool_calls=len(view.tool_calls),
    )


# ---------------------------------------------------------------------- report


def _median(values: list[float]) -> float:
    return statistics.median(values)


def _turn_table(messages: int, accord: list[Turns], sdk: list[Turns]) -> str:
    def rate(t: Turns) -> float:
        return messages / _median(t.wall)

    def cpu_us(t: Turns) -> float:
        return _median(t.cpu) / messages * 1e6

    def spread(t: Turns) -> str:
        rates = [messages / w for w in t.wall]
        return f"{min(rates):,.0f}-{max(rates):,.0f}"

    def agent_us(t: Turns) -> str:
        return f"{_median(t.agent_cpu) / messages * 1e6:.2f}"

    def at_answer(t: Turns) -> str:
        low, high = min(t.at_answer), max(t.at_answer)
        return f"{low:,}" if low == high else f"{low:,}-{high:,}"

    columns = [*accord, *sdk]

    def row(cells: list[str]) -> str:
        return "| " + " | ".join(cells) + " |"

    lines = [
        row(["measure", *(t.name for t in columns)]),
        "| --- |" + " ---: |" * len(columns),
        row(["messages/s (median)", *(f"{rate(t):,.0f}" for t in columns)]),
        row(["messages/s (min-max)", *(spread(t) for t in columns)]),
        row(["client CPU us/msg (median)", *(f"{cpu_us(t):.1f}" for t in columns)]),
        row(["client CPU / wall", *(f"{_median(t.cpu) / _median(t.wall):.2f}" for t in columns)]),
        row(["agent CPU us/msg", *(agent_us(t) for t in columns)]),
        row(["updates handled when the prompt returned", *(at_answer(t) for t in columns)]),
        row(["updates handled in the end (min)", *(f"{min(t.received):,}" for t in columns)]),
        "",
        row(["accord advantage", *(f"vs {s.name}: messages/s, CPU/msg" for s in sdk)]),
        "| --- |" + " ---: |" * len(sdk),
    ]
    for a in accord:
        ratios = (f"**{rate(a) / rate(s):.1f}x**, {cpu_us(s) / cpu_us(a):.1f}x" for s in sdk)
        lines.append(row([a.name, *ratios]))
    return "\n".join(lines)


def _memory_table(m: Memory) -> str:
    mib = 1024 * 1024
    mix = ", ".join(f"{kind} {count:,}" for kind, count in sorted(m.kinds.items()))
    rows = [
        "| measure | value |",
        "| --- | ---: |",
        f"| events folded | {m.events:,} ({m.messages:,} messages, {m.tool_calls:,} tool calls) |",
        f"| wire size of the updates | {m.wire_bytes / mib:.2f} MiB |",
        f"| text carried (chunks + tool output) | {m.text_bytes / mib:.2f} MiB |",
        f"| SessionView retained, total | {m.view_bytes / mib:.2f} MiB |",
        f"| SessionView retained, bytes/event | {m.view_bytes / m.events:,.0f} |",
        f"| peak while folding | {m.view_peak / mib:.2f} MiB |",
        f"| reference: SDK notifications kept in a list | {m.sdk_list_bytes / mib:.2f} MiB "
        f"({m.sdk_list_bytes / m.events:,.0f} B/event; "
        f"{m.sdk_list_bytes / m.view_bytes:.1f}x the view) |",
    ]
    return "\n".join(rows) + f"\n\nmix: {mix}"


async def run_turns(messages: int, rounds: int) -> tuple[list[Turns], list[Turns]]:
    accord = AccordClient()
    role = RoleClient()
    sdks = [SdkClient(telemetry=True), SdkClient(telemetry=False)]
    async with AsyncExitStack() as stack:
        await accord.open(stack)
        await role.open(stack)
        for sdk in sdks:
            await sdk.open(stack)
        for _ in range(rounds):
            await accord.round(messages)
            await role.round(messages)
            for sdk in sdks:
                await sdk.round(messages)
    return [accord.prompted, accord.streamed, role.turns], [sdk.turns for sdk in sdks]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--messages", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--events", type=int, default=10_000)
    args = parser.parse_args()
    compile_accord()
    load = os.getloadavg()
    accord, sdk = anyio.run(run_turns, args.messages, args.rounds)
    memory = bench_memory(args.events)
    load_after = os.getloadavg()
    print(
        f"(a) {args.messages:,}-chunk turns, median of {args.rounds}; Python "
        f"{sys.version.split()[0]}, {os.cpu_count()} cores; load average "
        f"{load[0]:.2f} before, {load_after[0]:.2f} after\n"
    )
    print(_turn_table(args.messages, accord, sdk))
    for turns in (*accord, *sdk):
        short = [got for got in turns.received if got != args.messages]
        if short:
            print(f"\nnote: {turns.name} handled only {short} of {args.messages:,} updates")
    print(f"\n(b) SessionView holding a {args.events:,}-event session\n")
    print(_memory_table(memory))


if __name__ == "__main__":
    main()
