"""Next edit suggestions (issue 23): what a suggestion costs beside the model's own time, and
what keeping a large document in sync costs the agent.

(a) **Suggestion latency.** The fake OpenAI server (``accord.testing``) answers every request
after a fixed delay (``--delay``, 20 ms by default) with the same rewritten region. Two ways,
interleaved request by request:

* ``model``: the same request straight to the model through pydantic-ai's direct API (what
  :mod:`accord.coder._nes_model` sends: the prompt :func:`accord.coder._nes.nes_prompt` writes
  for the same document and cursor), answered and read: the model's own time, with its HTTP
  client and pydantic-ai;
* ``nes``: ``NesSession.suggest`` of accord's client against the accord coder (in process, the
  in-memory ACP pair): the client's request, the runtime's window, the coder's prompt, that
  same model request, the answer diffed into edits, converted to UTF-16 and back.

Reported per round: p50 and p90 of each way's wall time and the overhead (``nes`` p50 minus
``model`` p50); the median over the rounds and the spread (min-max).

(b) **Document sync.** 10,000 incremental changes (``--changes``) applied to a 10,000-line
document (``--lines``) the way the agent does on ``document/didChange``: each change one
notification (typed, as the runtime gets it) with one range in UTF-16 (a character typed, or
a line deleted, at a pseudo-random place, a third of them on lines with a non-BMP character),
through the runtime's NES table (:class:`accord.agent._nes.NesSessions`: version check, the
exact apply, the recent-edit bookkeeping). Reported: microseconds per change (CPU and wall),
median and spread over the rounds; the final text is checked against the same edits applied
to a plain Python list of lines.

Rounds interleave (a) and (b). ``--hog`` runs two busy-looping processes beside it (load >= 2
on this machine's 2 cores).

Run: ``python benchmarks/bench_nes.py [--rounds 5] [--requests 50] [--delay 0.02]
[--changes 10000] [--lines 10000] [--hog]``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from typing import Any

import anyio

URI = "file:///bench/app.py"


def _document(lines: int) -> list[str]:
    """``lines`` lines of Python-looking text, every seventh with an emoji (two UTF-16 units)."""
    out: list[str] = []
    for n in range(lines):
        text = f"    value_{n} = compute({n}, name='item {n}')"
        if n % 7 == 0:
            text += "  # \U0001f600 note"
        out.append(text)
    return out


# ------------------------------------------------------------------ (a) latency


async def _latency_round(requests: int, delay: float) -> dict[str, float]:
    from pydantic_ai.direct import model_request
    from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart
    from pydantic_ai.settings import ModelSettings

    from accord.client import connect
    from accord.coder import CoderConfig, CoderRuntime
    from accord.coder._agent import model_choices
    from accord.coder._nes import NES_INSTRUCTIONS, nes_prompt
    from accord.documents import Point
    from accord.engines import MODEL_PURPOSE_HEADER, EditRequest
    from accord.store import MemorySessionStore
    from accord.testing import FakeOpenAIServer, ScriptedReply

    lines = _document(80)
    cursor = Point(40, 10)
    region = lines[37:47]
    answer = "\n".join(["<<<REGION_START>>>", *region[:3], region[3] + " + 1", *region[4:]])
    answer += "\n<<<REGION_END>>>"
    replies = [ScriptedReply(text=[answer], delay=delay) for _ in range(2 * requests + 2)]
    text = "\n".join(lines) + "\n"
    times: dict[str, list[float]] = {"model": [], "nes": []}
    with FakeOpenAIServer([], side_scripts={"nes": replies}) as server:
        config = CoderConfig(models=("qwen-local",), base_url=server.base_url)
        model = model_choices(config)[0].build()
        request = EditRequest(
            nes_session_id="bench",
            uri=URI,
            language_id="python",
            version=1,
            cursor=cursor,
            selection=None,
            trigger_kind="manual",
            first_line=10,
            lines=tuple(lines[10:71]),
            line_count=len(lines),
        )
        prompt, _ = nes_prompt(request)
        settings = ModelSettings(
            max_tokens=1024, temperature=0.0, extra_headers={MODEL_PURPOSE_HEADER: "nes"}
        )
        asked = [ModelRequest(parts=[SystemPromptPart(NES_INSTRUCTIONS), UserPromptPart(prompt)])]
        runtime = CoderRuntime(config, store=MemorySessionStore())
        async with connect(runtime) as conn, await conn.start_nes() as nes:
            await nes.open(URI, text, "python")
            for warm in range(2):
                if warm:
                    await model_request(model, asked, model_settings=settings)
                else:
                    await nes.suggest(URI, cursor)
            for _ in range(requests):
                started = time.perf_counter()
                await model_request(model, asked, model_settings=settings)
                times["model"].append(time.perf_counter() - started)
                started = time.perf_counter()
                (suggestion,) = await nes.suggest(URI, cursor)
                times["nes"].append(time.perf_counter() - started)
                assert suggestion.edits
    out: dict[str, float] = {}
    for way, values in times.items():
        values.sort()
        out[f"{way}_p50_ms"] = values[len(values) // 2] * 1e3
        out[f"{way}_p90_ms"] = values[int(len(values) * 0.9)] * 1e3
    out["overhead_ms"] = out["nes_p50_ms"] - out["model_p50_ms"]
    return out


# ------------------------------------------------------------------ (b) document sync


def _changes(count: int, lines: int, seed: int) -> list[tuple[int, int, int, int, str]]:
    """``(start line, start unit, end line, end unit, text)`` in UTF-16: mostly a character
    typed, every 50th a whole line deleted; a plain list of lines kept alongside picks valid
    places."""
    rng = random.Random(seed)
    model = _document(lines)
    out: list[tuple[int, int, int, int, str]] = []
    for n in range(count):
        line = rng.randrange(len(model))
        if n % 50 == 49:  # the line with its break
            out.append((line, 0, line + 1, 0, ""))
            del model[line]
            continue
        column = rng.randrange(len(model[line]) + 1)
        units = len(model[line][:column].encode("utf-16-le")) // 2
        char = "x" if n % 3 else "\u00e9"
        out.append((line, units, line, units, char))
        model[line] = model[line][:column] + char + model[line][column:]
    return out


def _expected(changes: list[tuple[int, int, int, int, str]], lines: int) -> str:
    model = _document(lines)
    text = "\n".join(model) + "\n"
    doc = text.split("\n")

    def index(line: int, units: int) -> int:
        prefix = doc[line].encode("utf-16-le")[: units * 2].decode("utf-16-le")
        return len(prefix)

    for sl, su, el, eu, new in changes:
        start = index(sl, su)
        end = index(el, eu)
        if sl == el:
            doc[sl] = doc[sl][:start] + new + doc[sl][end:]
        else:
            doc[sl : el + 1] = [doc[sl][:start] + new + doc[el][end:]]
    return "\n".join(doc)


def _sync_round(count: int, lines: int, seed: int) -> dict[str, float]:
    from accord.agent._nes import NesSessions
    from accord.schema import (
        DidChangeDocumentNotification,
        DidOpenDocumentNotification,
        Position,
        Range,
        StartNesRequest,
        TextDocumentContentChangeEvent,
    )

    changes = _changes(count, lines, seed)

    class _Quiet:
        async def suggest_edits(self, request: Any) -> list[Any]:
            return []

        async def edit_feedback(self, feedback: Any) -> None:
            return None

    table = NesSessions(_Quiet())
    session = table.start(StartNesRequest()).session_id
    text = "\n".join(_document(lines)) + "\n"
    table.did_open(
        DidOpenDocumentNotification(
            session_id=session, uri=URI, language_id="python", version=1, text=text
        )
    )
    notifications = [
        DidChangeDocumentNotification(
            session_id=session,
            uri=URI,
            version=version,
            content_changes=[
                TextDocumentContentChangeEvent(
                    range=Range(
                        start=Position(line=sl, character=su), end=Position(line=el, character=eu)
                    ),
                    text=new,
                )
            ],
        )
        for version, (sl, su, el, eu, new) in enumerate(changes, start=2)
    ]
    cpu, wall = time.process_time(), time.perf_counter()
    for notification in notifications:
        table.did_change(notification)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    held = table._sessions[session].documents[URI]
    assert held.broken is None, held.broken
    assert held.text.text == _expected(changes, lines), "the agent's text drifted"
    return {"cpu_us": cpu / count * 1e6, "wall_us": wall / count * 1e6}


# ------------------------------------------------------------------ main


def _spread(values: list[float], digits: int = 2) -> str:
    median = statistics.median(values)
    return f"{median:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main() -> None:
    """Run the rounds and print the figures (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=50, help="suggestions per round")
    parser.add_argument("--delay", type=float, default=0.02, help="the model's fixed delay (s)")
    parser.add_argument("--changes", type=int, default=10_000)
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--hog", action="store_true", help="two busy processes beside it")
    parser.add_argument("--json", action="store_true", help="print the raw figures as JSON")
    args = parser.parse_args()
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        for _ in range(2 if args.hog else 0)
    ]
    latency: list[dict[str, float]] = []
    sync: list[dict[str, float]] = []
    try:
        for number in range(args.rounds):
            latency.append(anyio.run(_latency_round, args.requests, args.delay))
            sync.append(_sync_round(args.changes, args.lines, seed=number))
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    if args.json:
        print(json.dumps({"latency": latency, "sync": sync}))
        return
    print(f"{args.rounds} rounds; load {load}{' (with the hog)' if args.hog else ''}")
    print(f"(a) {args.requests} suggestions per round, model delay {args.delay * 1e3:.0f} ms")
    for key in ("model_p50_ms", "model_p90_ms", "nes_p50_ms", "nes_p90_ms", "overhead_ms"):
        print(f"    {key:14} {_spread([r[key] for r in latency])}")
    print(f"(b) {args.changes:,} incremental changes on a {args.lines:,}-line document")
    for key in ("cpu_us", "wall_us"):
        print(f"    {key:14} {_spread([r[key] for r in sync])}")


if __name__ == "__main__":
    main()
