"""``accord chat`` benchmark: start-up, a long streamed reply, a large session.

Measured:

(a) start to first frame: ``accord chat`` (the built-in agent, no model configured) started
    in a real terminal (tmux, 100x30); the time until the screen shows the first frame
    ("Starting ...") and until the session is open (the footer says ``idle``), median of
    ``--starts`` runs.
(b) a reply of ``--deltas`` chunks streamed as fast as an in-process agent can send them to
    the app (headless, 100x36): the time from Enter until the whole reply is drawn, the
    time per 1,000 deltas, how many frames (conversation syncs) drew it (and per 1,000
    deltas), how far the screen trailed the stream while it came (for each frame: how long
    before it the first chunk it did not show yet had been sent; the worst), and the lag: how
    long after the agent's last chunk the screen showed it all.
(c) a session of ``--events`` events (a mix of prompts, replies in chunks, thoughts, tool
    calls with updates, plans) replayed by ``session/load`` and drawn: the time from start
    until it is all on screen, and the resident memory the process grew by (after a
    collection), against the same app opening an empty session.

Run: ``python benchmarks/bench_tui.py [--deltas 5000] [--events 10000] [--starts 3]``.
"""

from __future__ import annotations

import argparse
import gc
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
    """Answers every prompt with ``deltas`` chunks, sent back to back; notes when it is done."""

    def __init__(self, deltas: int) -> None:
        self.deltas = deltas
        self.finished_at = 0.0
        #: (time, characters sent so far) after each chunk.
        self.sent: list[tuple[float, int]] = []

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        return NewSessionResponse(session_id="bench")

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        length = 0
        for n in range(self.deltas):
            text = f"word{n} " if n % 12 else f"\n\nParagraph {n // 12}: "
            await self.client.send_chunk(request.session_id, text)
            length += len(text)
            self.sent.append((time.perf_counter(), length))
        self.finished_at = time.perf_counter()
        return PromptResponse(stop_reason="end_turn")


def trail(sent: list[tuple[float, int]], shown: list[tuple[float, int]]) -> float:
    """How far the screen trailed the stream, at worst: for each frame, how long before it
    the agent had sent the text it showed, less nothing (0 when it showed everything)."""
    worst = 0.0
    index = 0
    for at, length in shown:
        while index < len(sent) and sent[index][1] <= length:
            index += 1
        # sent[index] is the first chunk not shown yet (if any was sent before this frame)
        if index < len(sent) and sent[index][0] < at:
            worst = max(worst, at - sent[index][0])
    return worst


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


async def long_reply(deltas: int) -> dict[str, float]:
    agent = StreamingAgent(deltas)
    app = app_on(agent)
    async with app.run_test(size=SIZE) as pilot:
        await wait(pilot, lambda: app.active_pane is not None)
        pane = app.active_pane
        assert pane is not None
        await pilot.press("x")
        conversation = pane.conversation
        shown: list[tuple[float, int]] = []
        sync = conversation.sync

        async def recorded_sync() -> None:
            await sync()
            replies = list(pane.query(AgentMessage))
            if replies:
                shown.append((time.perf_counter(), replies[-1].shown_length))

        conversation.sync = recorded_sync  # type: ignore[method-assign]
        start = time.perf_counter()
        cpu = time.process_time()
        await pilot.press("enter")
        message = pane.session.view

        def drawn() -> bool:
            if not agent.finished_at or pane.conversation.pending:
                return False
            shown = list(pane.query(AgentMessage))
            return bool(shown) and shown[-1].shown_length == len(message.agent_text())

        await wait(pilot, drawn, step=0.001)
        end = time.perf_counter()
        cpu = time.process_time() - cpu
        return {
            "cpu": cpu,
            "cpu_per_1000": cpu / deltas * 1000,
            "total": end - start,
            "per_1000": (end - start) / deltas * 1000,
            "frames": pane.conversation.syncs,
            "frames_per_1000": pane.conversation.syncs / deltas * 1000,
            "stream": agent.finished_at - start,
            "lag": end - agent.finished_at,
            "trail": trail(agent.sent, shown),
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, default=5000)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--starts", type=int, default=3)
    args = parser.parse_args()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    started = first_frame(args.starts)
    if started is None:
        print("(a) start-up: tmux not found (or the chat never opened a session), skipped")
    else:
        print(
            f"(a) start to first frame {started['first_frame'] * 1000:.0f} ms, "
            f"to the session open {started['ready'] * 1000:.0f} ms (median of {args.starts})"
        )
    reply = anyio.run(long_reply, args.deltas, backend="asyncio")
    print(
        f"(b) {args.deltas} deltas streamed in {reply['stream']:.2f} s and drawn in "
        f"{reply['total']:.2f} s ({reply['per_1000'] * 1000:.0f} ms per 1,000 deltas; "
        f"{reply['cpu']:.2f} CPU s, agent and app in one process: "
        f"{reply['cpu_per_1000'] * 1000:.0f} CPU ms per 1,000 deltas), "
        f"{reply['frames']:.0f} frames ({reply['frames_per_1000']:.1f} per 1,000 deltas); "
        f"the screen trailed the stream by "
        f"at most {reply['trail'] * 1000:.0f} ms and was complete "
        f"{reply['lag'] * 1000:.0f} ms after the last chunk"
    )
    session = anyio.run(large_session, args.events, backend="asyncio")
    held = session["full_bytes"] / 1e6
    print(
        f"(c) {args.events}-event session loaded and drawn in {session['full_seconds']:.2f} s "
        f"(empty session: {session['empty_seconds']:.2f} s), {session['full_widgets']:.0f} "
        f"widgets drawn, resident memory +{held:.1f} MB (empty session: "
        f"+{session['empty_bytes'] / 1e6:.1f} MB)"
    )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
