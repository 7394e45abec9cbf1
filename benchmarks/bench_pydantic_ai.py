"""Side by side: a long streamed model reply through pydantic-ai alone, accord, and ACP Kit.

The fake OpenAI server (`accord.testing.FakeOpenAIServer`, its own process) streams a reply of N
text deltas (5,000 by default) over loopback HTTP. It is consumed three ways, round-robin, one
warm-up each:

* `pydantic-ai alone`: this process drives `Agent.iter()` + `node.stream()` (the cheapest way,
  see `bench_pydantic_ai_alone.py`) on `OpenAIChatModel` + `OpenAIProvider`, counting text events;
* `accord`: an agent process serving `AgentRuntime(PydanticAIEngine(agent))` over stdio (what
  `accord serve` runs: the SQLite session store by default, every event stored before it is
  sent), driven by accord's `ClientSideConnection` in this process, which receives the
  `agent_message_chunk` notifications of one `session/prompt`. Each run opens a new session
  and times its second prompt: the first one builds the session's model client and opens its
  HTTP connection, which pydantic-ai alone has done once for all its runs;
* `ACP Kit`: the same client driving an agent process running ACP Kit's pydantic adapter
  (`pydantic_acp.run_acp(agent)`), installed by this script into `.bench/acpkit-venv` from PyPI
  (`pydantic-acp` with the newest `pydantic-ai-slim` it allows, which is older than ours: the
  table says which). If it cannot be installed, its row says n/a.

Per way: the median and best delta rate over the runs (wall clock from sending the prompt to
its answer; a delta counts once its text has arrived, however many deltas an agent puts in one
chunk), CPU microseconds per delta of the agent process (this process for pydantic-ai alone)
and of the client, the `agent_message_chunk` events per reply, and the ratio of the median
rate to pydantic-ai alone. The target of issue 5: accord at least 80% of pydantic-ai alone.
accord merges the deltas of one message that arrive within 10 ms into one chunk
(`chunk_interval`); ACP Kit sends one chunk per delta.

Before and after side by side: `--tree DIR` (repeatable) adds one accord way per accord checkout
(e.g. main at an older commit unpacked with `git archive`): its agent process imports accord from
`DIR/src`, everything else (this script, the client, the fake server) stays the same. The
ratios of every accord way are then to pydantic-ai alone in the same run.

Run: `python benchmarks/bench_pydantic_ai.py [--deltas 5000] [--runs 5] [--store memory]
[--chunk-interval 0.01|none] [--no-acpkit] [--tree DIR ...] [--hog]` (`--hog` runs two
busy-looping processes beside the runs, for the figures at load >= 2). After the table, the
spread (min-max over the runs) of each way's rate and agent CPU per delta. The script re-runs
itself as the agent processes (`--serve accord|acpkit`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

ME = Path(__file__).resolve()
ROOT = ME.parents[1]
SRC = ROOT / "src"
ACPKIT_VENV = ROOT / ".bench" / "acpkit-venv"
ACPKIT_PACKAGES = ("pydantic-acp", "pydantic-ai-slim[openai]")
MODEL = "fake-model"
CONTEXT_WINDOW = 128_000
TIMEOUT = 120.0
"""Bound on one prompt (seconds): generous, the machine may be loaded."""

WAYS = ("pydantic-ai alone", "accord", "ACP Kit")


@dataclass(frozen=True, slots=True)
class Sample:
    """One consumed reply: the text received, in how many events, and what it cost."""

    text: int
    events: int
    wall: float
    agent_cpu: float
    client_cpu: float


# ------------------------------------------------------------------------- agent processes


def serve_accord(base_url: str, store: str, chunk_interval: float | None, src: Path = SRC) -> None:
    """Serve `AgentRuntime(PydanticAIEngine(...))` over stdio (the `--serve accord` mode), with
    accord imported from `src`."""
    sys.path.insert(0, str(src))
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from accord.agent import AgentRuntime
    from accord.engines.pydantic_ai import ModelChoice, PydanticAIEngine
    from accord.roles import run_agent_stdio
    from accord.store import MemorySessionStore, SessionStore, SqliteSessionStore

    def model() -> OpenAIChatModel:
        return OpenAIChatModel(MODEL, provider=OpenAIProvider(base_url=base_url, api_key="bench"))

    choice = ModelChoice(id=MODEL, model=model, context_window=CONTEXT_WINDOW)
    engine = PydanticAIEngine(Agent(), models=[choice], chunk_interval=chunk_interval)
    session_store: SessionStore = (
        MemorySessionStore() if store == "memory" else SqliteSessionStore(store)
    )
    run_agent_stdio(AgentRuntime(engine, store=session_store))


def serve_acpkit(base_url: str) -> None:
    """Serve ACP Kit's pydantic adapter over stdio (the `--serve acpkit` mode, in its venv)."""
    import importlib

    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    run_acp: Callable[[object], None] = importlib.import_module("pydantic_acp").run_acp
    provider = OpenAIProvider(base_url=base_url, api_key="bench")
    run_acp(Agent(OpenAIChatModel(MODEL, provider=provider)))


def acpkit_python() -> tuple[Path | None, str]:
    """The ACP Kit venv's python (installing it if needed), and its pydantic-ai version."""
    python = ACPKIT_VENV / "bin" / "python"
    try:
        if not python.exists():
            print(f"installing ACP Kit into {ACPKIT_VENV} ...", file=sys.stderr)
            subprocess.run([sys.executable, "-m", "venv", str(ACPKIT_VENV)], check=True)
            pip = [str(python), "-m", "pip", "install", "-q", *ACPKIT_PACKAGES]
            subprocess.run(pip, check=True, stdout=subprocess.DEVNULL)
        code = "import importlib.metadata as m; print(m.version('pydantic-ai-slim'))"
        version = subprocess.run(
            [str(python), "-c", f"import pydantic_acp; {code}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"ACP Kit unavailable: {exc}", file=sys.stderr)
        return None, ""
    return python, version


# ------------------------------------------------------------------------- measuring


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by process `pid` (Linux `/proc`)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def run(
    base_url: str,
    *,
    runs: int,
    store: str,
    chunk_interval: str,
    acpkit: Path | None,
    trees: dict[str, Path],
) -> dict[str, list[Sample]]:
    """Measure every way `runs` times, round-robin, after one warm-up each (`trees`: the
    accord ways beyond this checkout's, by name, each an accord checkout)."""
    from contextlib import AsyncExitStack

    import anyio
    from pydantic_ai import Agent
    from pydantic_ai.messages import PartDeltaEvent, PartStartEvent, TextPart, TextPartDelta
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    from accord.roles import Client, ClientSideConnection
    from accord.schema import (
        AgentMessageChunkSessionUpdate,
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

    class Counter(Client):
        """Counts the agent's message chunks and the characters of text they carry."""

        def __init__(self) -> None:
            self.chunks = 0
            self.text = 0

        async def session_update(self, notification: SessionNotification) -> None:
            update = notification.update
            if isinstance(update, AgentMessageChunkSessionUpdate):
                self.chunks += 1
                self.text += len(getattr(update.content, "text", ""))

        async def request_permission(
            self, request: RequestPermissionRequest
        ) -> RequestPermissionResponse:
            return RequestPermissionResponse(outcome=CancelledRequestPermissionOutcome())

    provider = OpenAIProvider(base_url=base_url, api_key="bench")
    agent = Agent(OpenAIChatModel(MODEL, provider=provider))

    async def alone() -> Sample:
        deltas = text = 0
        wall, cpu = time.perf_counter(), time.process_time()
        async with agent.iter("go") as agent_run:
            async for node in agent_run:
                if Agent.is_model_request_node(node):
                    async with node.stream(agent_run.ctx) as stream:
                        async for event in stream:
                            if isinstance(event, PartDeltaEvent) and isinstance(
                                event.delta, TextPartDelta
                            ):
                                deltas += 1
                                text += len(event.delta.content_delta)
                            elif isinstance(event, PartStartEvent) and isinstance(
                                event.part, TextPart
                            ):
                                deltas += 1
                                text += len(event.part.content)
        cpu = time.process_time() - cpu
        return Sample(text, deltas, time.perf_counter() - wall, cpu, 0.0)

    async def connect(stack: AsyncExitStack, command: list[str]) -> Callable[[], Awaitable[Sample]]:
        transport = await stack.enter_async_context(spawn_agent(command))
        counter = Counter()
        conn = await stack.enter_async_context(ClientSideConnection(counter, transport))
        with anyio.fail_after(TIMEOUT):
            await conn.initialize(
                InitializeRequest(
                    protocol_version=1, client_capabilities=counter.client_capabilities()
                )
            )

        async def prompt() -> Sample:
            with anyio.fail_after(TIMEOUT):
                session = await conn.new_session(NewSessionRequest(cwd=str(ROOT), mcp_servers=[]))
                request = PromptRequest(
                    session_id=session.session_id, prompt=[TextContentBlock(text="go")]
                )
                await conn.prompt(request)  # the session's first turn opens its model client
                counter.chunks = counter.text = 0
                agent_cpu, cpu = process_cpu(transport.pid), time.process_time()
                wall = time.perf_counter()
                response = await conn.prompt(request)
                wall = time.perf_counter() - wall
            assert response.stop_reason == "end_turn", response.stop_reason
            agent_cpu = process_cpu(transport.pid) - agent_cpu
            client_cpu = time.process_time() - cpu
            return Sample(counter.text, counter.chunks, wall, agent_cpu, client_cpu)

        return prompt

    me = str(ME)
    samples: dict[str, list[Sample]] = {way: [] for way in (*WAYS[:2], *trees, *WAYS[2:])}
    async with provider, AsyncExitStack() as stack:
        ways: dict[str, Callable[[], Awaitable[Sample]]] = {"pydantic-ai alone": alone}
        command = [sys.executable, me, "--serve", "accord", "--base-url", base_url]
        command += ["--store", store, "--chunk-interval", chunk_interval]
        ways["accord"] = await connect(stack, command)
        for name, tree in trees.items():
            src = str(tree / "src")
            store_arg = store if store == "memory" else f"{store}.{len(ways)}"
            tree_command = [sys.executable, me, "--serve", "accord", "--base-url", base_url]
            tree_command += ["--store", store_arg, "--chunk-interval", chunk_interval]
            ways[name] = await connect(stack, [*tree_command, "--src", src])
        if acpkit is not None:
            command = [str(acpkit), me, "--serve", "acpkit", "--base-url", base_url]
            ways["ACP Kit"] = await connect(stack, command)
        for measure in ways.values():
            await measure()  # warm-up: imports, connections, caches
        for _ in range(runs):
            for way, measure in ways.items():
                samples[way].append(await measure())
    return samples


def report(samples: dict[str, list[Sample]], deltas: int, text: int, acpkit_version: str) -> None:
    """Print the table: delta rates, CPU per delta, events per reply, ratio to pydantic-ai alone.

    A delta counts as delivered when its text arrived; an agent may carry several in one chunk.
    """
    import pydantic_ai

    ours = getattr(pydantic_ai, "__version__", "?")
    print(f"one reply of {deltas:,} text deltas over loopback HTTP, {os.cpu_count()} CPUs,")
    print(f"load average {os.getloadavg()[0]:.1f}; pydantic-ai {ours}", end="")
    print(f" (ACP Kit on pydantic-ai {acpkit_version})" if acpkit_version else "")
    width = max(18, *(len(way) for way in samples))
    print(
        f"{'way':<{width}} {'deltas/s':>9} {'best':>9} {'agent µs/δ':>11} {'client µs/δ':>12}"
        f" {'ms/reply':>9} {'events':>7} {'vs alone':>9}"
    )
    base = None
    for way, runs in samples.items():
        if not runs:
            print(f"{way:<{width}} {'n/a':>9}")
            continue
        assert all(s.text == text for s in runs), f"{way}: text {[s.text for s in runs]}"
        rate = statistics.median(deltas / s.wall for s in runs)
        best = max(deltas / s.wall for s in runs)
        agent_cpu = statistics.median(s.agent_cpu / deltas * 1e6 for s in runs)
        client_cpu = statistics.median(s.client_cpu / deltas * 1e6 for s in runs)
        wall = statistics.median(s.wall for s in runs) * 1e3
        events = statistics.median(s.events for s in runs)
        base = base or rate
        client = f"{client_cpu:>12.1f}" if client_cpu else f"{'-':>12}"
        print(f"{way:<{width}} {rate:>9,.0f} {best:>9,.0f} {agent_cpu:>11.1f} {client}", end="")
        print(f" {wall:>9.0f} {events:>7,.0f} {rate / base:>8.0%}")
    print("spread over the runs (min-max): deltas/s, agent µs/δ")
    for way, runs in samples.items():
        if runs:
            rates = [deltas / s.wall for s in runs]
            cpus = [s.agent_cpu / deltas * 1e6 for s in runs]
            print(
                f"{way:<{width}} {min(rates):,.0f}-{max(rates):,.0f}"
                f"  {min(cpus):.1f}-{max(cpus):.1f}"
            )


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments; serve an agent, or run the fake server and the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--deltas", type=int, default=5000, help="text deltas per reply")
    parser.add_argument("--runs", type=int, default=5, help="measured replies per way")
    parser.add_argument("--store", default="sqlite", help="accord's store: sqlite or memory")
    parser.add_argument(
        "--chunk-interval",
        default="0.01",
        help="accord's chunk_interval in seconds, or 'none' for one chunk per delta",
    )
    parser.add_argument("--no-acpkit", action="store_true", help="skip ACP Kit")
    parser.add_argument(
        "--tree",
        action="append",
        type=Path,
        default=[],
        help="another accord checkout to serve as one more way (repeatable)",
    )
    parser.add_argument("--hog", action="store_true", help="two busy processes beside it")
    parser.add_argument("--src", type=Path, default=SRC, help=argparse.SUPPRESS)
    parser.add_argument("--serve", choices=("accord", "acpkit"), help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve == "accord":
        interval = None if args.chunk_interval == "none" else float(args.chunk_interval)
        serve_accord(args.base_url, args.store, interval, args.src)
        return
    if args.serve == "acpkit":
        serve_acpkit(args.base_url)
        return

    sys.path.insert(0, str(SRC))
    acpkit, acpkit_version = (None, "") if args.no_acpkit else acpkit_python()
    trees = {f"accord {tree}": tree.resolve() for tree in args.tree}
    for tree in trees.values():
        if not (tree / "src" / "accord").is_dir():
            parser.error(f"--tree {tree}: no src/accord in it")
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        for _ in range(2 if args.hog else 0)
    ]
    try:
        _compare(args, trees, acpkit, acpkit_version)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


def _compare(
    args: argparse.Namespace, trees: dict[str, Path], acpkit: Path | None, acpkit_version: str
) -> None:
    """Run the ways against one fake server and print the table."""
    import anyio
    from bench_pydantic_ai_alone import fake_server, make_reply

    requests = 2 * (args.runs + 1) * (len(WAYS) + len(trees)) + 10  # two prompts per run; a margin
    with tempfile.TemporaryDirectory() as tmp:
        store = "memory" if args.store == "memory" else str(Path(tmp) / "sessions.db")
        with fake_server([make_reply(args.deltas)] * requests, in_process=False) as base_url:
            samples = anyio.run(
                lambda: run(
                    base_url,
                    runs=args.runs,
                    store=store,
                    chunk_interval=args.chunk_interval,
                    acpkit=acpkit,
                    trees=trees,
                )
            )
    text = len("".join(make_reply(args.deltas).text))
    report(samples, args.deltas, text, acpkit_version)


if __name__ == "__main__":
    main()
