"""Baseline: how fast pydantic-ai alone consumes a long streamed model reply.

The fake OpenAI server (`accord.testing.FakeOpenAIServer`, run as its own process so it does not
compete for this process's GIL) streams a reply of N text deltas over real loopback HTTP; this
process consumes it through pydantic-ai's `OpenAIChatModel` + `OpenAIProvider` (the real provider
code path), built once and reused, in four ways:

* `openai SDK`: the `openai` client's stream alone (the ceiling under pydantic-ai),
* `iter`: `Agent.iter()` and `node.stream(ctx)` on each model-request node,
* `event_stream_handler`: `Agent.run(..., event_stream_handler=...)`, events handled inline,
* `run_stream_events`: `Agent.run_stream_events()` (a background task feeds the consumer through a
  zero-buffer memory stream, so every event costs a task switch).

Printed per way: text deltas/s (median and best run) and all events/s (median), wall clock from
the request to the last event, and CPU microseconds per delta in this process (median; the
steadiest figure on a busy machine). The ways run round-robin after one warm-up reply each. The
later side-by-side benchmark compares accord (and ACP Kit) against these figures.

Run: `python benchmarks/bench_pydantic_ai_alone.py [--deltas 5000] [--runs 5] [--in-process]`.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterable, Awaitable, Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

SRC = Path(__file__).resolve().parents[1] / "src"
if str(SRC) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(SRC))

from accord.testing import FakeOpenAIServer, ScriptedReply, ScriptedUsage, dump_script  # noqa: E402

WORDS = ("alpha ", "beta ", "gamma ", "delta ", "epsilon ")
"""Delta texts cycle through these: a few characters each, like real tokens."""

WAYS = ("openai SDK", "iter", "event_stream_handler", "run_stream_events")
"""The ways of consuming the reply, in the order they run."""


@dataclass(frozen=True, slots=True)
class Sample:
    """One consumed reply."""

    deltas: int
    events: int
    wall: float
    cpu: float


def make_reply(deltas: int) -> ScriptedReply:
    """A reply of `deltas` text deltas with usage, as a real model sends it."""
    text = [WORDS[i % len(WORDS)] for i in range(deltas)]
    return ScriptedReply(text=text, usage=ScriptedUsage(prompt_tokens=12, completion_tokens=deltas))


@contextmanager
def fake_server(replies: list[ScriptedReply], *, in_process: bool) -> Generator[str]:
    """Yield the base URL of a fake server answering `replies`, in a child process by default."""
    if in_process:
        with FakeOpenAIServer(replies) as server:
            yield server.base_url
        return
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "script.json"
        script.write_text(dump_script(replies), encoding="utf-8")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
        }
        command = [sys.executable, "-m", "accord.testing.fake_openai", "--script", str(script)]
        with subprocess.Popen(command, stdout=subprocess.PIPE, env=env, text=True) as process:
            try:
                assert process.stdout is not None
                port = int(process.stdout.readline())
                yield f"http://127.0.0.1:{port}/v1"
            finally:
                process.terminate()
                process.wait(10)


async def measure(consume: Callable[[], Awaitable[tuple[int, int]]]) -> Sample:
    """Time one call of `consume`, which returns (text deltas, events)."""
    wall, cpu = time.perf_counter(), time.process_time()
    deltas, events = await consume()
    return Sample(deltas, events, time.perf_counter() - wall, time.process_time() - cpu)


async def run(base_url: str, *, runs: int, modes: list[str]) -> dict[str, list[Sample]]:
    """Consume `runs` replies per mode (after one warm-up each); return the samples."""
    from pydantic_ai import Agent, RunContext
    from pydantic_ai.messages import (
        AgentStreamEvent,
        PartDeltaEvent,
        PartStartEvent,
        TextPart,
        TextPartDelta,
    )
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    def is_text(event: object) -> bool:
        if isinstance(event, PartDeltaEvent):
            return isinstance(event.delta, TextPartDelta)
        return isinstance(event, PartStartEvent) and isinstance(event.part, TextPart)

    provider = OpenAIProvider(base_url=base_url, api_key="bench")
    agent = Agent(OpenAIChatModel("fake-model", provider=provider))

    async def sdk() -> tuple[int, int]:
        stream = await provider.client.chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "go"}],
            stream=True,
            stream_options={"include_usage": True},
        )
        deltas = events = 0
        async with stream:
            async for chunk in stream:
                events += 1
                deltas += bool(chunk.choices and chunk.choices[0].delta.content)
        return deltas, events

    async def iterate() -> tuple[int, int]:
        deltas = events = 0
        async with agent.iter("go") as agent_run:
            async for node in agent_run:
                if Agent.is_model_request_node(node) or Agent.is_call_tools_node(node):
                    async with node.stream(agent_run.ctx) as stream:
                        async for event in stream:
                            events += 1
                            deltas += is_text(event)
        return deltas, events

    async def stream_events() -> tuple[int, int]:
        deltas = events = 0
        async with agent.run_stream_events("go") as stream:
            async for event in stream:
                events += 1
                deltas += is_text(event)
        return deltas, events

    async def handler() -> tuple[int, int]:
        counts = [0, 0]

        async def on_events(
            ctx: RunContext[object], events: AsyncIterable[AgentStreamEvent]
        ) -> None:
            async for event in events:
                counts[1] += 1
                counts[0] += is_text(event)

        await agent.run("go", event_stream_handler=on_events)
        return counts[0], counts[1]

    ways: dict[str, Callable[[], Awaitable[tuple[int, int]]]] = {
        "openai SDK": sdk,
        "iter": iterate,
        "event_stream_handler": handler,
        "run_stream_events": stream_events,
    }
    samples: dict[str, list[Sample]] = {mode: [] for mode in modes}
    async with provider:
        for mode in modes:
            await measure(ways[mode])  # warm-up: connection, imports, caches
        for _ in range(runs):  # round-robin, so a burst of load elsewhere hits every way alike
            for mode in modes:
                samples[mode].append(await measure(ways[mode]))
    return samples


def report(samples: dict[str, list[Sample]], deltas: int) -> None:
    """Print one line per way: deltas/s (median and best run), events/s, CPU µs per delta."""
    print(f"pydantic-ai alone, one reply of {deltas:,} text deltas over loopback HTTP")
    header = f"{'way':<20} {'deltas/s':>9} {'best':>7} {'events/s':>9} {'CPU µs/delta':>13}"
    print(header)
    for mode, runs in samples.items():
        assert all(s.deltas == deltas for s in runs), f"{mode}: {[s.deltas for s in runs]}"
        rates = [s.deltas / s.wall for s in runs]
        events = statistics.median(s.events / s.wall for s in runs)
        cpu = statistics.median(s.cpu / s.deltas * 1e6 for s in runs)
        median, best = statistics.median(rates), max(rates)
        print(f"{mode:<20} {median:>9,.0f} {best:>7,.0f} {events:>9,.0f} {cpu:>13.1f}")


def main(argv: list[str] | None = None) -> None:
    """Parse the arguments, run the fake server and the consumers, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--deltas", type=int, default=5000, help="text deltas per reply")
    parser.add_argument("--runs", type=int, default=5, help="measured replies per way")
    parser.add_argument("--way", action="append", choices=WAYS, help="repeatable; default: all")
    parser.add_argument("--in-process", action="store_true", help="fake server in this process")
    args = parser.parse_args(argv)
    modes: list[str] = args.way or list(WAYS)
    replies = [make_reply(args.deltas)] * ((args.runs + 1) * len(modes))
    with fake_server(replies, in_process=args.in_process) as base_url:
        samples = anyio.run(lambda: run(base_url, runs=args.runs, modes=modes))
    report(samples, args.deltas)


if __name__ == "__main__":
    main()
