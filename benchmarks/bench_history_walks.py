"""pydantic-ai's own per-request walks over the history: what each costs at 20 and 1,000 messages.

`bench_long_session.py` shows pydantic-ai alone taking about four times as long per turn at
turn 500 as at turn 10 (issue 21). This script says where that goes, in one process, without
accord: it builds the conversation of that benchmark (pydantic-ai alone, a scripted
`FunctionModel` streaming 1,000 characters, prompts of the same size) to `--turns` turns, then

1. counts, with `cProfile` over a few turns at the end, how often each walk runs per turn (a
   walk being a function of pydantic-ai that goes over every message of the history);
2. times each walk on its own (no profiler: median CPU time of repeated calls) on the first 20
   messages and on the whole history, and gives its cost per turn (calls per turn times one
   call) at both sizes;
3. times one whole turn (`Agent.iter` and `node.stream`, CPU) on four histories: the first 20
   messages, the whole history, the whole history with a pydantic-ai `CompactionPart` (a
   summary the application wrote, in a request) 20 messages before its end, and only those
   last 20 messages after that summary (what accord's compaction hands pydantic-ai: it
   replaces the older turns).

The walks are pydantic-ai's private functions, called here only to time them; nothing is
patched. Names and call counts are those of pydantic-ai 2.78.

Run: `python benchmarks/bench_history_walks.py [--turns 500] [--reps 15]`.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib
import os
import pstats
import statistics
import sys
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

REPLY_DELTAS = 20
REPLY_DELTA = "0123456789" * 5  # 50 characters: 1,000 per reply
PROMPT_FILLER = "the same question again, with the same words each time. " * 4
SHORT = 20
"""Messages in the short history (turn 10), and kept after the summary."""

WALKS: tuple[tuple[str, str, str], ...] = (
    ("pydantic_ai.models", "Model.prepare_messages", "prepare_messages"),
    ("pydantic_ai.models", "Model._note_lookalike_frames (in prepare_messages)", ""),
    ("pydantic_ai.messages", "_clean_message_history", "_clean_message_history"),
    ("pydantic_ai.messages", "_post_compaction_window_start", "_post_compaction_window_start"),
    (
        "pydantic_ai.toolsets._tool_search",
        "discovered_tool_names_in_order",
        "discovered_tool_names_in_order",
    ),
    ("pydantic_ai._instructions", "LoadedInstructionValues.of", "of"),
    ("pydantic_ai._instructions", "LoweredInstructions.of", "of"),
)
"""(module, the walk as named in the table, its function name in the profile: "" for one timed
but not counted on its own)."""


async def _reply(messages: list[Any], info: Any) -> AsyncIterator[str]:
    for _ in range(REPLY_DELTAS):
        yield REPLY_DELTA


async def _turn(agent: Any, history: list[Any], turn: int) -> list[Any]:
    """One turn of the conversation on `history`; the history after it."""
    from pydantic_ai import Agent

    async with agent.iter(f"turn {turn:04d}: {PROMPT_FILLER}", message_history=history) as run:
        async for node in run:
            if Agent.is_model_request_node(node) or Agent.is_call_tools_node(node):
                async with node.stream(run.ctx) as stream:
                    async for _ in stream:
                        pass
        return run.all_messages()


def _timed(call: Callable[[], object], reps: int) -> float:
    """The median CPU time of `call`, in milliseconds."""
    times: list[float] = []
    for _ in range(reps):
        start = time.process_time()
        call()
        times.append(time.process_time() - start)
    return statistics.median(times) * 1e3


def _calls_per_turn(profile: cProfile.Profile, turns: int) -> dict[tuple[str, str], float]:
    """(module file's tail, function name) -> calls per turn, from the profile."""
    stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    counted: dict[tuple[str, str], float] = {}
    for (path, _line, name), (_, calls, *_rest) in stats.items():
        if "pydantic_ai" in path:
            tail = path.split("pydantic_ai", 1)[1]
            counted[(tail, name)] = counted.get((tail, name), 0.0) + calls / turns
    return counted


def _walk_calls(model: Any) -> dict[str, Callable[[Sequence[Any]], object]]:
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    messages: Any = importlib.import_module("pydantic_ai.messages")
    search: Any = importlib.import_module("pydantic_ai.toolsets._tool_search")
    instructions: Any = importlib.import_module("pydantic_ai._instructions")
    prompt = ModelRequest(parts=[UserPromptPart("the next prompt")])
    return {
        "Model.prepare_messages": lambda h: model.prepare_messages([*h, prompt]),
        "Model._note_lookalike_frames (in prepare_messages)": (
            lambda h: model._note_lookalike_frames(list(h), list(h), announce=True)
        ),
        "_clean_message_history": lambda h: messages._clean_message_history(list(h)),
        "_post_compaction_window_start": lambda h: messages._post_compaction_window_start(h),
        "discovered_tool_names_in_order": lambda h: search.discovered_tool_names_in_order(h),
        "LoadedInstructionValues.of": lambda h: instructions.LoadedInstructionValues.of(h),
        "LoweredInstructions.of": lambda h: instructions.LoweredInstructions.of(h),
    }


async def main(turns: int, reps: int) -> None:
    """Build the conversation, then print the three tables (module docstring)."""
    from pydantic_ai import Agent
    from pydantic_ai.messages import CompactionPart, ModelRequest
    from pydantic_ai.models.function import FunctionModel

    model = FunctionModel(stream_function=_reply)
    agent = Agent(model)
    history: list[Any] = []
    profile = cProfile.Profile()
    profiled = 5
    for turn in range(turns):
        if turn == turns - profiled:
            profile.enable()
        history = await _turn(agent, history, turn)
    profile.disable()
    short, whole = history[:SHORT], history
    print(
        f"pydantic-ai alone, {turns} turns: {len(whole)} messages; {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f}"
    )

    counts = _calls_per_turn(profile, profiled)
    calls = _walk_calls(model)
    print(f"\n{'walk':<52} {'calls/turn':>10} {'1 call':>18} {'per turn':>18}")
    print(f"{'':<52} {'':>10} {SHORT:>8} {len(whole):>9} {SHORT:>8} {len(whole):>9}  (ms)")
    total_short = total_whole = 0.0
    for module, label, name in WALKS:
        tail = module.split("pydantic_ai", 1)[1].replace(".", "/")
        per_turn = (
            sum(n for (path, fn), n in counts.items() if fn == name and tail in path)
            if name
            else 1.0
        )
        if label.endswith("LoadedInstructionValues.of"):
            per_turn = _of_calls(profile, profiled, "LoadedInstructionValues")
        elif label.endswith("LoweredInstructions.of"):
            per_turn = _of_calls(profile, profiled, "LoweredInstructions")
        walk = calls[label]
        one_short = _timed(lambda walk=walk: walk(short), reps * 10)
        one_whole = _timed(lambda walk=walk: walk(whole), reps)
        if name:  # the lookalike pass is part of prepare_messages' figure
            total_short += per_turn * one_short
            total_whole += per_turn * one_whole
        print(
            f"{label:<52} {per_turn:>10.1f} {one_short:>8.3f} {one_whole:>9.3f}"
            f" {per_turn * one_short:>8.2f} {per_turn * one_whole:>9.2f}"
        )
    print(f"{'sum (the lookalike pass counted once)':<52} {'':>10} {'':>18}", end="")
    print(f" {total_short:>8.2f} {total_whole:>9.2f}")

    summary = ModelRequest(parts=[CompactionPart(content="the summary of the earlier turns")])
    histories = {
        f"first {SHORT} messages": short,
        f"all {len(whole)} messages": whole,
        f"all, a CompactionPart {SHORT} before the end": [
            *whole[:-SHORT],
            summary,
            *whole[-SHORT:],
        ],
        f"the CompactionPart and the last {SHORT} (compacted)": [summary, *whole[-SHORT:]],
    }
    cpu: dict[str, list[float]] = {name: [] for name in histories}
    for _ in range(reps):  # interleaved
        for name, messages in histories.items():
            start = time.process_time()
            await _turn(agent, list(messages), turns)
            cpu[name].append((time.process_time() - start) * 1e3)
    print(f"\n{'one whole turn on':<52} {'CPU ms':>8} {'spread':>14}")
    for name, values in cpu.items():
        kept = values[1:]  # the first of each is a warm-up
        print(f"{name:<52} {statistics.median(kept):>8.2f} {min(kept):>6.1f}-{max(kept):<6.1f}")


def _of_calls(profile: cProfile.Profile, turns: int, owner: str) -> float:
    """Calls per turn of `owner.of` (two classes in one module each have an `of`)."""
    module = importlib.import_module("pydantic_ai._instructions")
    line = getattr(module, owner).of.__func__.__code__.co_firstlineno
    stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    return sum(
        value[1] / turns
        for (path, at, name), value in stats.items()
        if name == "of" and path.endswith("_instructions.py") and at == line
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=500, help="turns of the conversation")
    parser.add_argument("--reps", type=int, default=15, help="repetitions of each timing")
    args = parser.parse_args()
    if args.turns < SHORT:
        parser.error(f"--turns must be at least {SHORT}")
    sys.exit(asyncio.run(main(args.turns, args.reps)))
