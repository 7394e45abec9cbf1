"""A long conversation: the agent's CPU and allocations per turn at turn 500 against turn 10.

One session of a pydantic-ai agent served by accord (`AgentRuntime(PydanticAIEngine(agent))`
over stdio, the SQLite session store on a file: what `accord serve` runs) is prompted `--turns`
times (500 by default) by accord's `ClientSideConnection` in this process. Every prompt has the
same size and every reply too: the agent's model is a scripted pydantic-ai `FunctionModel` whose
stream function yields the same text (1,000 characters in 20 deltas) whatever the history, so
what grows from turn to turn is only what the agent does with the history.

The agent process measures itself, at each model request (one per turn): its CPU time
(`time.process_time`) and, in the traced runs, `tracemalloc`'s current and peak traced memory
(the peak reset after each reading). One turn is the cycle from one model request to the next:
the reply's streaming, storing and sending, the snapshot of the history, the session's saved
state, the next prompt's handling up to its model request. Per cycle: CPU microseconds, and the
allocated bytes as the traced peak above the cycle's starting level (a whole-history dump or
load shows there as a block the size of the history). "turn 10" is the median of the cycles of
turns 10-19, "turn 500" that of the last ten turns. CPU is measured in runs without
`tracemalloc` (which slows every allocation several times); allocations in runs with it. The
target of issue 21: turn 500 at most 1.2x turn 10, for both.

Before and after side by side: `--src DIR` (repeatable) adds one way per accord checkout
(e.g. `git worktree add /tmp/before 34bed0c~1`; its agent process imports accord from
`DIR/src`, the client and this script stay the same). Every way's conversations run at the same
time, turn by turn interleaved (turn k of each way, then turn k+1), and `--runs` repetitions
with fresh agent processes; the table gives the median ratio and the spread (min-max) over the
runs. `--trace-runs N` sets the traced repetitions (0: none). `--hog` runs two busy-looping
processes beside it (a load of at least 2).

With compaction: `--openai --window TOKENS` adds one more way, accord at this checkout given
the model's context window and the engine's `Compaction` (85% of the window, the coder's
default), so its history is summarised whenever the next request would exceed it (the scripted
server answers the summary request, `x-accord-purpose: compact`, with 2,000 characters); the
other ways keep the whole history. The summary requests are not recorded as turns: a
compaction's CPU counts in the cycle of the turn it precedes. For that way the table gives its
compactions and the means of both ends (the median hides the cycle that compacted) instead of an
own share (its history is not pydantic-ai alone's).

Run: `python benchmarks/bench_long_session.py [--turns 500] [--runs 3] [--trace-runs N]
[--src DIR ...] [--hog] [--profile FILE FIRST LAST] [--openai [--window TOKENS]]`.
The script re-runs itself as the agent processes (`--serve`).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator
from contextlib import AsyncExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ME = Path(__file__).resolve()
ROOT = ME.parents[1]
SRC = ROOT / "src"
TIMEOUT = 120.0
"""Bound on one prompt (seconds): generous, the machine may be loaded."""
REPLY_DELTAS = 20
REPLY_DELTA = "0123456789" * 5  # 50 characters: 1,000 per reply
PROMPT_FILLER = "the same question again, with the same words each time. " * 4
WINDOW = 10
ALONE = "pydantic-ai alone"
"""Turns per end of the comparison: turns 10..19 against the last ten."""


# ------------------------------------------------------------------------- the agent process


def serve(
    src: Path,
    store: str,
    stats: Path,
    trace: bool,
    profile: tuple[Path, int, int] | None,
    alone: bool = False,
    base_url: str | None = None,
    window: int | None = None,
) -> None:
    """Serve `AgentRuntime(PydanticAIEngine(agent))` over stdio with accord imported from
    `src`; append one line of figures to `stats` at each model request (the `--serve` mode).
    `profile`: write a cProfile of turns `first` to `last` (exclusive) to the file. `alone`:
    no accord, pydantic-ai alone runs the same conversation (turns read from stdin).
    `base_url`: the model is the coder's OpenAI chat model on that server (``--openai``).
    `window`: the model's context window, and the engine compacts (``--window``)."""
    sys.path.insert(0, str(src))
    import cProfile
    import tracemalloc

    import anyio
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from accord.agent import AgentRuntime
    from accord.engines.pydantic_ai import Compaction, ModelChoice, PydanticAIEngine
    from accord.roles import run_agent_stdio
    from accord.store import SqliteSessionStore

    if trace:
        tracemalloc.start()
    out = stats.open("a", buffering=1)
    profiler = cProfile.Profile()
    requests = 0
    summaries = 0

    def summarised() -> None:
        """A compaction's summary request: counted, not a turn."""
        nonlocal summaries
        summaries += 1

    def record() -> None:
        """One line of figures at a model request (and the profile's start or end)."""
        nonlocal requests
        if profile is not None:
            if requests == profile[1]:
                profiler.enable()
            elif requests == profile[2]:
                profiler.disable()
                profiler.dump_stats(profile[0])
        requests += 1
        cpu = time.process_time()
        current, peak = tracemalloc.get_traced_memory() if trace else (0, 0)
        if trace:
            tracemalloc.reset_peak()
        out.write(f"{cpu} {current} {peak} {summaries}\n")

    async def reply(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        record()
        for _ in range(REPLY_DELTAS):
            yield REPLY_DELTA

    model = (
        FunctionModel(stream_function=reply)
        if base_url is None
        else _chat(base_url, record, summarised, alone)
    )
    agent = Agent(model)
    if alone:
        anyio.run(_alone, agent)
        return
    if window is None:
        engine = PydanticAIEngine(agent)
    else:
        choice = ModelChoice(id="fake-model", model=model, context_window=window, priced=False)
        engine = PydanticAIEngine(agent, models=[choice], compaction=Compaction())
    run_agent_stdio(AgentRuntime(engine, store=SqliteSessionStore(store)))


def _chat(
    base_url: str, record: Callable[[], None], summarised: Callable[[], None], alone: bool
) -> Any:
    """The coder's model behind ``--base-url`` (``OpenAIChatModel`` on a ``PlainChatOpenAI``
    client unless the way is `alone`, which keeps the SDK's own), `record` called as each
    request is sent, `summarised` instead for a compaction's summary request."""
    import httpx2
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from accord.engines import MODEL_PURPOSE_HEADER

    async def sent(request: httpx2.Request) -> None:
        if request.headers.get(MODEL_PURPOSE_HEADER):
            summarised()
        else:
            record()

    http = httpx2.AsyncClient(event_hooks={"request": [sent]})
    provider = OpenAIProvider(base_url=base_url, api_key="bench", http_client=http)
    if not alone:
        from accord.coder._openai_chat import plain_chat

        plain_chat(provider.client)
    return OpenAIChatModel("fake-model", provider=provider)


async def _alone(agent: Any) -> None:
    """pydantic-ai alone: one run per line read from stdin, each continuing the history of the
    one before (streamed, as accord's engine runs it); ``ok`` written after each."""
    import anyio.to_thread
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage

    history: list[ModelMessage] = []
    while line := await anyio.to_thread.run_sync(sys.stdin.readline):
        async with agent.iter(line.strip(), message_history=history) as agent_run:
            async for node in agent_run:
                if Agent.is_model_request_node(node) or Agent.is_call_tools_node(node):
                    async with node.stream(agent_run.ctx) as stream:
                        async for _ in stream:
                            pass
            history = agent_run.all_messages()
        sys.stdout.write("ok\n")
        sys.stdout.flush()


# ------------------------------------------------------------------------- measuring


@dataclass(frozen=True, slots=True)
class Turns:
    """One conversation's per-turn figures (a cycle from one model request to the next)."""

    cpu_us: list[float]
    alloc: list[int]
    compactions: int = 0

    @staticmethod
    def read(path: Path) -> Turns:
        """Read the lines the agent process wrote (cpu seconds, current and peak bytes, the
        summary requests so far)."""
        rows = [line.split() for line in path.read_text().splitlines()]
        cpu = [float(r[0]) for r in rows]
        current = [int(r[1]) for r in rows]
        peak = [int(r[2]) for r in rows]
        return Turns(
            cpu_us=[(b - a) * 1e6 for a, b in itertools.pairwise(cpu)],
            alloc=[max(0, peak[k + 1] - current[k]) for k in range(len(rows) - 1)],
            compactions=int(rows[-1][3]) if rows else 0,
        )


def ends(values: list[float] | list[int]) -> tuple[float, float]:
    """The medians of turns 10..19 and of the last ten turns (cycle k is turn k+1's start)."""
    return (
        statistics.median(values[9 : 9 + WINDOW]),
        statistics.median(values[-WINDOW:]),
    )


@asynccontextmanager
async def _alone_way(command: list[str]) -> AsyncGenerator[Callable[[int], Awaitable[None]]]:
    """The pydantic-ai alone process, and a function running one turn in it."""
    import anyio
    from anyio.streams.text import TextReceiveStream

    async with await anyio.open_process(command) as process:
        assert process.stdin is not None and process.stdout is not None
        lines = TextReceiveStream(process.stdout)
        buffer = ""

        async def prompt(turn: int) -> None:
            nonlocal buffer
            assert process.stdin is not None
            await process.stdin.send(f"turn {turn:04d}: {PROMPT_FILLER}\n".encode())
            with anyio.fail_after(TIMEOUT):
                while "\n" not in buffer:
                    buffer += await lines.receive()
            line, buffer = buffer.split("\n", 1)
            assert line == "ok", line

        try:
            yield prompt
        finally:
            await process.stdin.aclose()
            with anyio.move_on_after(TIMEOUT):
                await process.wait()


async def conversations(
    ways: dict[str, tuple[Path | None, bool]],
    turns: int,
    trace: bool,
    tmp: Path,
    profile: list[str],
    base_url: str | None = None,
    window: int | None = None,
) -> dict[str, Turns]:
    """One conversation of `turns` per way (name -> accord's source or None for pydantic-ai
    alone, whether it compacts at `window`), the ways' turns interleaved; their figures."""
    import anyio

    from accord.roles import Client, ClientSideConnection
    from accord.schema import (
        CancelledRequestPermissionOutcome,
        InitializeRequest,
        NewSessionRequest,
        PromptRequest,
        RequestPermissionRequest,
        RequestPermissionResponse,
        SessionNotification,
        TextContentBlock,
    )
    from accord.transports import spawn_agent

    class Quiet(Client):
        """Receives the updates and answers nothing but a cancelled permission."""

        async def session_update(self, notification: SessionNotification) -> None:
            return None

        async def request_permission(
            self, request: RequestPermissionRequest
        ) -> RequestPermissionResponse:
            return RequestPermissionResponse(outcome=CancelledRequestPermissionOutcome())

    stats: dict[str, Path] = {}
    prompts: dict[str, Callable[[int], Awaitable[None]]] = {}
    async with AsyncExitStack() as stack:
        for index, (name, (src, compacts)) in enumerate(ways.items()):
            stats[name] = tmp / f"stats.{index}"
            stats[name].unlink(missing_ok=True)
            store = tmp / f"sessions.{index}.db"
            store.unlink(missing_ok=True)
            command = [sys.executable, str(ME), "--serve", "--src", str(src or SRC)]
            command += ["--store", str(store), "--stats", str(stats[name])]
            command += ["--trace"] if trace else []
            command += ["--base-url", base_url] if base_url else []
            command += ["--window", str(window)] if window and compacts else []
            if profile:
                command += ["--profile", f"{profile[0]}.{index}", *profile[1:]]
            if src is None:
                prompts[name] = await stack.enter_async_context(_alone_way([*command, "--alone"]))
                continue
            transport = await stack.enter_async_context(spawn_agent(command))
            client = Quiet()
            conn = await stack.enter_async_context(ClientSideConnection(client, transport))
            with anyio.fail_after(TIMEOUT):
                await conn.initialize(
                    InitializeRequest(
                        protocol_version=1, client_capabilities=client.client_capabilities()
                    )
                )
                session = await conn.new_session(NewSessionRequest(cwd=str(ROOT), mcp_servers=[]))

            def prompter(conn: Any = conn, session_id: str = session.session_id) -> Any:
                async def prompt(turn: int) -> None:
                    text = f"turn {turn:04d}: {PROMPT_FILLER}"
                    request = PromptRequest(
                        session_id=session_id, prompt=[TextContentBlock(text=text)]
                    )
                    with anyio.fail_after(TIMEOUT):
                        response = await conn.prompt(request)
                    assert response.stop_reason == "end_turn", response.stop_reason

                return prompt

            prompts[name] = prompter()
        for turn in range(turns + 1):  # one more: the last turn's cycle ends at its request
            for prompt in prompts.values():
                await prompt(turn)
    return {name: Turns.read(path) for name, path in stats.items()}


def _row(name: str, label: str, pairs: list[tuple[float, float]], unit: float) -> None:
    ratios = sorted(b / a if a > 0 else float("inf") for a, b in pairs)
    early = statistics.median(a for a, _ in pairs) / unit
    late = statistics.median(b for _, b in pairs) / unit
    spread = f"{ratios[0]:.2f}-{ratios[-1]:.2f}"
    print(
        f"{name:<30} {label:<16} {early:>10,.0f} {late:>10,.0f}"
        f" {statistics.median(ratios):>6.2f}x {spread:>13}  {len(pairs)}"
    )


def report(
    runs: list[dict[str, Turns]],
    traced: list[dict[str, Turns]],
    turns: int,
    compacting: frozenset[str] = frozenset(),
) -> None:
    """Print, per way: turn 10 and the last turn (medians over the runs) and the ratio's
    spread; for each accord way also its own share (the way's cycle minus pydantic-ai
    alone's, turn by turn, in the same run), or for a way in `compacting` its compactions and
    the means of the two ends instead."""
    print(
        f"one conversation of {turns} turns per way and run, turns interleaved; "
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    print(f"turn 10 = median of turns 10-19, turn {turns} = median of the last {WINDOW}")
    header = f"{'way':<30} {'measure':<16} {'turn 10':>10} {f'turn {turns}':>10}"
    print(f"{header} {'ratio':>7} {'spread':>13}  runs")
    for name in runs[0] if runs else traced[0]:
        for label, sets, field, unit in (
            ("CPU µs", runs, "cpu_us", 1.0),
            ("allocated KB", traced, "alloc", 1024.0),
        ):
            if not sets:
                continue
            _row(name, label, [ends(getattr(run[name], field)) for run in sets], unit)
            if name in compacting:
                means = [_mean_ends(getattr(run[name], field)) for run in sets]
                _row(f"  {name}: means", label, means, unit)
                counts = ", ".join(str(run[name].compactions) for run in sets)
                print(f"  {name}: compactions per run: {counts}")
                continue
            if name == ALONE:
                continue
            own: list[tuple[float, float]] = []
            for run in sets:
                way, alone = getattr(run[name], field), getattr(run[ALONE], field)
                own.append(ends([a - b for a, b in zip(way, alone, strict=True)]))
            _row(f"  {name}: own share", label, own, unit)


def _mean_ends(values: list[float] | list[int]) -> tuple[float, float]:
    """The means of turns 10..19 and of the last ten turns (a compacting turn included)."""
    return statistics.fmean(values[9 : 9 + WINDOW]), statistics.fmean(values[-WINDOW:])


@contextmanager
def _server(openai: bool) -> Generator[str | None]:
    """With ``--openai``: the scripted OpenAI-compatible model server in its own process
    (``bench_soak.py``'s: a reply of `REPLY_DELTAS` pieces of the prompt, whatever the
    history), its base URL; else None."""
    if not openai:
        yield None
        return
    from bench_soak import model_server

    with model_server(REPLY_DELTAS, 0.0) as (url, _):
        yield url


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments; serve an agent, or run the conversations and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=500, help="turns per conversation")
    parser.add_argument("--runs", type=int, default=3, help="repetitions (CPU, then traced)")
    parser.add_argument(
        "--src",
        action="append",
        type=Path,
        default=[],
        help="another accord checkout to run as one more way (repeatable)",
    )
    parser.add_argument("--hog", action="store_true", help="two busy processes beside it")
    parser.add_argument(
        "--trace-runs", type=int, help="repetitions with tracemalloc (default: --runs; 0: none)"
    )
    parser.add_argument(
        "--profile",
        nargs=3,
        metavar=("FILE", "FIRST", "LAST"),
        default=[],
        help="write a cProfile of turns FIRST..LAST-1 of each way's agent to FILE.<way index>",
    )
    parser.add_argument(
        "--openai",
        action="store_true",
        help="the coder's OpenAI chat model on a scripted server (benchmarks/_soak_model.py)",
    )
    parser.add_argument(
        "--window",
        type=int,
        help="with --openai: one more way, accord compacting at this window (tokens)",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    parser.add_argument("--stats", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--alone", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        profile = None
        if args.profile:
            profile = (Path(args.profile[0]), int(args.profile[1]), int(args.profile[2]))
        src = args.src[0] if args.src else SRC
        serve(
            src, args.store, args.stats, args.trace, profile, args.alone, args.base_url, args.window
        )
        return
    if args.window is not None and (not args.openai or args.window < 1):
        parser.error("--window needs --openai and a positive number of tokens")
    if args.turns < 2 * WINDOW + 10:
        parser.error(f"--turns must be at least {2 * WINDOW + 10}")
    ways: dict[str, tuple[Path | None, bool]] = {ALONE: (None, False)}
    ways["accord (this checkout)"] = (SRC, False)
    for tree in args.src:
        if not (tree / "src" / "accord").is_dir():
            parser.error(f"--src {tree}: no src/accord in it")
        ways[f"accord {tree}"] = ((tree / "src").resolve(), False)
    compacting = frozenset[str]()
    if args.window is not None:
        compacting = frozenset({f"accord, compacting at {args.window:,}"})
        ways[next(iter(compacting))] = (SRC, True)
    sys.path.insert(0, str(SRC))
    import anyio

    hogs = [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        for _ in range(2 if args.hog else 0)
    ]
    runs: list[dict[str, Turns]] = []
    traced: list[dict[str, Turns]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp, _server(args.openai) as url:
            for _ in range(args.runs):
                runs.append(
                    anyio.run(
                        conversations,
                        ways,
                        args.turns,
                        False,
                        Path(tmp),
                        args.profile,
                        url,
                        args.window,
                    )
                )
            for _ in range(args.runs if args.trace_runs is None else args.trace_runs):
                traced.append(
                    anyio.run(
                        conversations,
                        ways,
                        args.turns,
                        True,
                        Path(tmp),
                        list[str](),
                        url,
                        args.window,
                    )
                )
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    report(runs, traced, args.turns, compacting)
    if os.environ.get("BENCH_JSON"):
        dump = {"cpu": [{k: v.cpu_us for k, v in r.items()} for r in runs]}
        Path(os.environ["BENCH_JSON"]).write_text(json.dumps(dump))


if __name__ == "__main__":
    main()
