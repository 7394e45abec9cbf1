"""``accord chat`` benchmark: start-up, a long streamed reply, a large session.

Measured:

(a) start to first frame: ``accord chat`` (the built-in agent, no model configured) started
    in a real terminal (tmux, 100x30); the time until the screen shows the first frame
    ("Starting ...") and until the session is open (the footer says ``idle``), median of
    ``--starts`` runs.
(b) a reply of ``--deltas`` chunks (a paragraph every 12) streamed as fast as an in-process
    agent can send them to the app (headless, 100x36), once the prompt is on screen; and
    (b2) the same reply at ``--rate`` deltas a second. A frame is counted when the screen has
    been laid out and drawn after a sync of the conversation. Reported: the time until the
    whole reply is on screen, CPU per 1,000 deltas, how many syncs drew it, the longest gap
    between two frames, how far the screen trailed the stream while it came (for each frame:
    how long before it the first chunk it did not show yet had been sent; the worst), how
    long after the agent's last chunk the screen showed it (the trail at the end), and for
    each 1,000 deltas: how long the agent took to send them (agent and app share one process
    and one event loop, so a frame that costs more slows the stream), the CPU the process
    spent meanwhile, and how long after the previous 1,000 the screen showed them all.
(c) a session of ``--events`` events (a mix of prompts, replies in chunks, thoughts, tool
    calls with updates, plans) replayed by ``session/load`` and drawn: the time from start
    until it is all on screen, and the resident memory the process grew by (after a
    collection), against the same app opening an empty session.

Run: ``python benchmarks/bench_tui.py [--deltas 5000] [--rate 1000] [--events 10000] [--starts 3]
[--only a,b,b2,c]``.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from typing import Any

import anyio

from accord.client import AgentSpec
from accord.roles import Agent
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    AgentThoughtChunkSessionUpdate,
    ContentToolCallContent,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PlanEntry,
    PlanSessionUpdate,
    PromptRequest,
    PromptResponse,
    SessionNotification,
    SessionUpdate,
    TextContentBlock,
    ToolCallSessionUpdate,
    ToolCallUpdateSessionUpdate,
    UserMessageChunkSessionUpdate,
)
from accord.tui import ChatApp
from accord.tui._conversation import AgentMessage

SIZE = (100, 36)


class StreamingAgent(Agent):
    """Answers every prompt with ``deltas`` chunks: back to back (``rate`` 0), or ``rate`` a
    second; notes when each chunk was sent and when it is done."""

    def __init__(self, deltas: int, rate: float = 0) -> None:
        self.deltas = deltas
        self.rate = rate
        self.finished_at = 0.0
        #: Set by the benchmark once the prompt is on screen: the stream starts then.
        self.go = anyio.Event()
        #: (time, CPU time, characters sent so far) after each chunk.
        self.sent: list[tuple[float, float, int]] = []

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="bench")

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        await self.go.wait()
        length = 0
        start = time.perf_counter()
        for n in range(self.deltas):
            text = f"word{n} " if n % 12 else f"\n\nParagraph {n // 12}: "
            await self.client.send_chunk(request.session_id, text)
            length += len(text)
            self.sent.append((time.perf_counter(), time.process_time(), length))
            if self.rate:
                await anyio.sleep(max(0.0, start + (n + 1) / self.rate - time.perf_counter()))
        self.finished_at = time.perf_counter()
        return PromptResponse(stop_reason="end_turn")


def trail(sent: list[tuple[float, float, int]], shown: list[tuple[float, int]]) -> float:
    """How far the screen trailed the stream, at worst: for each frame, how long before it
    the agent had sent the first chunk it did not show yet (0 when it showed everything)."""
    worst = 0.0
    index = 0
    for at, length in shown:
        while index < len(sent) and sent[index][2] <= length:
            index += 1
        # sent[index] is the first chunk not shown yet (if any was sent before this frame)
        if index < len(sent) and sent[index][0] < at:
            worst = max(worst, at - sent[index][0])
    return worst


def per_thousand(
    start: float, sent: list[tuple[float, float, int]], shown: list[tuple[float, int]]
) -> list[tuple[float, float, float]]:
    """For each 1,000 deltas: (seconds the agent took to send them, CPU seconds the process
    spent meanwhile, seconds between the frames that first showed the previous thousand and
    this one complete)."""
    rows: list[tuple[float, float, float]] = []
    cpu0 = sent[0][1] if sent else 0.0
    previous = (start, cpu0, start)
    for end in range(999, len(sent), 1000):
        at, cpu, length = sent[end]
        drawn = next((t for t, n in shown if n >= length), float("nan"))
        rows.append((at - previous[0], cpu - previous[1], drawn - previous[2]))
        previous = (at, cpu, drawn)
    return rows


def session_updates(events: int) -> list[SessionUpdate]:
    """A realistic session of about ``events`` updates (20 per turn)."""
    updates: list[SessionUpdate] = []
    turn = 0
    while len(updates) < events:
        turn += 1
        text = TextContentBlock
        updates.append(UserMessageChunkSessionUpdate(content=text(text=f"Prompt {turn}: fix it")))
        updates.append(
            AgentThoughtChunkSessionUpdate(
                content=text(text="Thinking about it."), message_id=f"t{turn}"
            )
        )
        updates.append(
            PlanSessionUpdate(
                entries=[PlanEntry(content=f"step {turn}", priority="medium", status="in_progress")]
            )
        )
        call = f"call-{turn}"
        updates.append(
            ToolCallSessionUpdate(tool_call_id=call, title=f"Read file{turn}.py", kind="read")
        )
        updates.append(ToolCallUpdateSessionUpdate(tool_call_id=call, status="in_progress"))
        updates.append(
            ToolCallUpdateSessionUpdate(
                tool_call_id=call,
                status="completed",
                content=[ContentToolCallContent(content=text(text=f"{turn} lines read"))],
            )
        )
        for n in range(14):
            updates.append(
                AgentMessageChunkSessionUpdate(
                    content=text(
                        text=f"Reply {turn} part {n}. " + ("`code` " if n % 5 == 0 else "")
                    ),
                    message_id=f"m{turn}",
                )
            )
    return updates[:events]


class StoredSessionAgent(Agent):
    """Replays a stored session of ``updates`` on ``session/load``."""

    def __init__(self, updates: list[SessionUpdate]) -> None:
        self.updates = updates

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="fresh")

    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        for update in self.updates:
            await self.client.session_update(
                SessionNotification(session_id=request.session_id, update=update)
            )
        return LoadSessionResponse()


def app_on(agent: AgentSpec, **options: Any) -> ChatApp:
    async def build() -> AgentSpec:
        return agent

    return ChatApp(build, agent_name="bench", cwd=tempfile.gettempdir(), **options)


async def wait(pilot: Any, predicate: Callable[[], object], step: float = 0.005) -> None:
    with anyio.fail_after(600):
        while not predicate():
            await pilot.pause(step)


async def long_reply(deltas: int, rate: float = 0) -> dict[str, Any]:
    agent = StreamingAgent(deltas, rate)
    app = app_on(agent)
    async with app.run_test(size=SIZE) as pilot:
        await wait(pilot, lambda: app.active_pane is not None)
        pane = app.active_pane
        assert pane is not None
        await pilot.press("x")
        conversation = pane.conversation
        # (time, characters of the reply on screen) for each frame the app drew: recorded
        # when the screen hands its update to the terminal (after layout and compositing),
        # showing what the last completed sync had put in the widgets.
        shown: list[tuple[float, int]] = []
        synced = 0
        sync = conversation.sync
        display = app._display  # pyright: ignore[reportPrivateUsage]

        def reply_length() -> int:
            items = conversation.items
            last = items[-1] if items else None
            return last.shown_length if isinstance(last, AgentMessage) else 0

        def recorded_display(screen: Any, renderable: Any) -> None:
            display(screen, renderable)
            if renderable is not None:
                shown.append((time.perf_counter(), synced))

        async def recorded_sync() -> None:
            nonlocal synced
            await sync()
            synced = reply_length()

        app._display = recorded_display  # type: ignore[method-assign]
        conversation.sync = recorded_sync  # type: ignore[method-assign]
        await pilot.press("enter")
        start = time.perf_counter()
        cpu = time.process_time()
        agent.go.set()
        message = pane.session.view

        def drawn() -> bool:
            if not agent.finished_at or conversation.pending:
                return False
            return bool(shown) and shown[-1][1] == len(message.agent_text())

        # Plain sleeps: the pilot's pauses wait for the app to go quiet, which a stream
        # at a steady rate never lets it do.
        with anyio.fail_after(600):
            while not drawn():  # noqa: ASYNC110 (polls the app's state, no event to wait on)
                await anyio.sleep(0.001)
        end = shown[-1][0]
        cpu = time.process_time() - cpu
        frames = [b - a for (a, _), (b, _) in itertools.pairwise(shown)]
        return {
            "cpu": cpu,
            "cpu_per_1000": cpu / deltas * 1000,
            "total": end - start,
            "per_1000": (end - start) / deltas * 1000,
            "frames": conversation.syncs,
            "frames_per_1000": conversation.syncs / deltas * 1000,
            "stream": agent.finished_at - start,
            "lag": end - agent.finished_at,
            "trail": trail(agent.sent, shown),
            "thousands": per_thousand(start, agent.sent, shown),
            "longest_frame": max(frames, default=0.0),
        }


async def large_session(events: int) -> dict[str, float]:
    updates = session_updates(events)
    results: dict[str, float] = {}
    for label, replay in (("empty", []), ("full", updates)):
        elapsed, memory, widgets = await _load_and_draw(replay)
        results[f"{label}_seconds"] = elapsed
        results[f"{label}_bytes"] = memory
        results[f"{label}_widgets"] = widgets
    return results


def _rss() -> int:
    """This process's resident memory in bytes (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


async def _load_and_draw(replay: list[SessionUpdate]) -> tuple[float, int, int]:
    """Open a stored session and draw it: (seconds, resident memory grown by, widgets)."""
    gc.collect()
    before = _rss()
    start = time.perf_counter()
    app = app_on(StoredSessionAgent(replay), session_id="stored")
    async with app.run_test(size=SIZE) as pilot:
        await wait(pilot, lambda: app.active_pane is not None)
        pane = app.active_pane
        assert pane is not None
        await wait(pilot, lambda: not pane.conversation.pending, step=0.01)
        await pilot.pause()
        elapsed = time.perf_counter() - start
        gc.collect()
        memory = _rss() - before
        widgets = len(pane.conversation.items)
    return elapsed, memory, widgets


def first_frame(starts: int) -> dict[str, float] | None:
    tmux = shutil.which("tmux")
    if tmux is None:
        return None
    frames: list[float] = []
    ready: list[float] = []
    for _ in range(starts):
        frame, up = _start_once(tmux)
        if frame is not None and up is not None:
            frames.append(frame)
            ready.append(up)
    if not frames:
        return None
    return {"first_frame": statistics.median(frames), "ready": statistics.median(ready)}


def _start_once(tmux: str) -> tuple[float | None, float | None]:
    """One start of ``accord chat`` in tmux: (first frame, session open) in seconds."""
    socket = f"accord-bench-{uuid.uuid4().hex[:8]}"
    store = os.path.join(tempfile.mkdtemp(), "s.sqlite3")
    env = {
        "OPENAI_API_KEY": "bench",
        "PYTHONPATH": os.pathsep.join(sys.path),
        "TERM": "xterm-256color",
    }
    # A model is configured (never called: the benchmark sends no prompt).
    model = ["--model", "openai:fake-model", "--base-url", "http://127.0.0.1:9/v1"]
    command = [
        "env",
        *(f"{k}={v}" for k, v in env.items()),
        sys.executable,
        "-m",
        "accord.cli",
        "chat",
        "--store",
        store,
        *model,
    ]
    capture = [tmux, "-L", socket, "capture-pane", "-p", "-t", "b"]
    start = time.perf_counter()
    subprocess.run(
        [tmux, "-L", socket, "new-session", "-d", "-s", "b", "-x", "100", "-y", "30", *command],
        check=True,
    )
    frame = ready = None
    try:
        while time.perf_counter() - start < 60:
            shown = subprocess.run(capture, capture_output=True, text=True, check=False).stdout
            if frame is None and ("Starting" in shown or " idle " in shown):
                frame = time.perf_counter() - start
            if " idle " in shown:
                ready = time.perf_counter() - start
                break
            time.sleep(0.005)
    finally:
        subprocess.run([tmux, "-L", socket, "kill-server"], capture_output=True, check=False)
    return frame, ready


def _report_reply(label: str, deltas: int, rate: float, reply: dict[str, Any]) -> None:
    pace = f"{rate:.0f} a second" if rate else "as fast as the agent can send them"
    print(
        f"({label}) {deltas} deltas, {pace}: streamed in {reply['stream']:.2f} s, all on "
        f"screen {reply['total']:.2f} s after the stream began "
        f"({reply['cpu']:.2f} CPU s, agent and app in one process: "
        f"{reply['cpu_per_1000'] * 1000:.0f} CPU ms per 1,000 deltas); "
        f"{reply['frames']:.0f} syncs ({reply['frames_per_1000']:.1f} per 1,000 deltas), "
        f"longest gap between two frames {reply['longest_frame'] * 1000:.0f} ms; the screen "
        f"trailed the stream by at most {reply['trail'] * 1000:.0f} ms and showed the last "
        f"chunk {reply['lag'] * 1000:.0f} ms after it was sent"
    )
    for n, (sent, cpu, drawn) in enumerate(reply["thousands"], start=1):
        print(
            f"    deltas {(n - 1) * 1000 + 1:>5}-{n * 1000:<5}: sent in {sent * 1000:5.0f} ms, "
            f"{cpu * 1000:5.0f} CPU ms; drawn {drawn * 1000:5.0f} ms after the previous 1,000"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=5000)
    parser.add_argument("--rate", type=float, default=1000, help="deltas a second for (b2)")
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--only", default="a,b,b2,c", help="which parts to run (a,b,b2,c)")
    args = parser.parse_args()
    parts = set(args.only.split(","))
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if "a" in parts:
        started = first_frame(args.starts)
        if started is None:
            print("(a) start-up: tmux not found (or the chat never opened a session), skipped")
        else:
            print(
                f"(a) start to first frame {started['first_frame'] * 1000:.0f} ms, to the "
                f"session open {started['ready'] * 1000:.0f} ms (median of {args.starts})"
            )
    for label, rate in (("b", 0.0), ("b2", args.rate)):
        if label in parts:
            reply = anyio.run(long_reply, args.deltas, rate, backend="asyncio")
            _report_reply(label, args.deltas, rate, reply)
    if "c" in parts:
        session = anyio.run(large_session, args.events, backend="asyncio")
        held = session["full_bytes"] / 1e6
        print(
            f"(c) {args.events}-event session loaded and drawn in "
            f"{session['full_seconds']:.2f} s (empty session: {session['empty_seconds']:.2f} s)"
            f", {session['full_widgets']:.0f} widgets drawn, resident memory +{held:.1f} MB "
            f"(empty session: +{session['empty_bytes'] / 1e6:.1f} MB)"
        )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
