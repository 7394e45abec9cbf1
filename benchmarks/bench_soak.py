"""Soak: one real ``accord serve``, many sessions streaming at once for minutes (issue 12).

One ``accord serve`` subprocess (the coder, SQLite store in a temporary directory, its model
the fake OpenAI-compatible server on loopback in this process) serves ``--sessions``
concurrent streams over its stdio pipes. Each stream prompts turn after turn until
``--duration`` seconds have passed, in conversations of ``--turns-per-session`` turns: then it
closes the session (``session/close``; it stays stored and listed) and goes on in a new one,
so the load is steady: always ``--sessions`` live conversations of up to that many turns,
the way an editor's users start new conversations. With ``--turns-per-session 0`` each stream
keeps one conversation for the whole run, which grows without end, and so does what a turn
must hold: the model request carries the whole history (see ``docs/benchmarks.md``). Every
model reply streams ``--chunks`` numbered pieces (``s<stream>t<turn>c<n>``), so the client
checks that each turn's text is exactly the pieces sent, in order: nothing lost, nothing
repeated. Meanwhile:

* the agent's resident memory (``VmRSS``) is sampled every ``--sample`` seconds; the figure is
  the growth from the first sample after the warm-up (one turn per session) to the end; its
  CPU time (user + system, from ``/proc``) too: the share of one core it used says whether
  the run was bound by the machine (a loaded machine gives it less) or by the agent; the
  bench process's own share (the client) says whether the bench was;
* a separate task calls ``session/list`` every 0.2 s and records its latency; the p99 must
  stay under ``--list-p99-ms``;
* as a control, another task sends a request the agent answers without its store (an
  unknown extension method, answered -32601) every 0.2 s: its latency is what the machine
  and the pipes cost, so a list latency far above it points at the store.

Bounded in time (``--duration``, plus a minute for shutdown) and in count (sessions, chunks);
loopback and pipes only. Exit status 1 if anything was lost or a bound was missed.

Run: ``python benchmarks/bench_soak.py`` (10 minutes, conversations of 200 turns), ``--hog``
beside two busy-looping processes, ``--duration 5`` for a smoke run.
``--probe DIR`` runs the agent under ``benchmarks/soak_probe.py`` (event-loop iterations,
garbage-collector pauses, where a listing's time goes; tracemalloc snapshots on request) and
leaves its measurements in ``DIR`` at every sample; the figures then include its overhead.
Linux (reads ``/proc``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Generator
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from accord.client import ClientSession, ConnectedAgent, connect
from accord.errors import RequestError


@dataclass
class Tally:
    """What the run saw."""

    turns: int = 0
    chunks: int = 0
    #: Compactions: the summary requests the model answered (``--window``).
    summaries: int = 0
    lost: list[str] = field(default_factory=list[str])
    rss: list[tuple[float, int]] = field(default_factory=list[tuple[float, int]])
    list_ms: list[float] = field(default_factory=list[float])
    control_ms: list[float] = field(default_factory=list[float])
    cpu: list[tuple[float, float]] = field(default_factory=list[tuple[float, float]])
    bench_cpu: list[float] = field(default_factory=list[float])
    model_cpu: list[float] = field(default_factory=list[float])
    load_at_start: tuple[float, float, float] = (0.0, 0.0, 0.0)
    sessions_opened: int = 0
    conversations_completed: int = 0
    turns_reached: list[int] = field(default_factory=list[int])
    streaming_s: float = 0.0


def pieces(tag: str, count: int) -> list[str]:
    """The numbered pieces one reply streams for the prompt ``tag``."""
    return [f"{tag}c{n} " for n in range(count)]


@contextlib.contextmanager
def model_server(chunks: int, delay: float, tally: Tally) -> Generator[tuple[str, int]]:
    """``benchmarks/_soak_model.py`` in its own process: its base URL and its pid.

    When it stops, the summaries it wrote (compactions) go into ``tally``."""
    script = str(Path(__file__).with_name("_soak_model.py"))
    model = subprocess.Popen(
        [sys.executable, script, "--chunks", str(chunks), "--delay", str(delay)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert model.stdout is not None
        port = int(model.stdout.readline())
        yield f"http://127.0.0.1:{port}/v1", model.pid
    finally:
        model.terminate()
        try:
            model.wait(10)
        except subprocess.TimeoutExpired:
            model.kill()
            model.wait()
        assert model.stdout is not None
        for line in model.stdout.read().splitlines():
            if line.startswith("summaries "):
                tally.summaries = int(line.split()[1])


def rss_of(pid: int) -> int:
    """Resident memory of process ``pid`` in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def cpu_of(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def agent_pid() -> int:
    """The ``accord serve`` child of this process."""
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2 :].split()[1] == me and b"serve" in cmdline:
            return int(entry)
    raise RuntimeError("accord serve is not running")


async def one_turn(
    session: ClientSession, index: int, turn: int, chunks: int, tally: Tally
) -> None:
    tag = f"s{index}t{turn}"
    result = await session.prompt(tag)
    expected = "".join(pieces(tag, chunks))
    tally.turns += 1
    if result.stop_reason != "end_turn" or result.text != expected:
        tally.lost.append(f"{tag}: {result.stop_reason}, {len(result.text)}/{len(expected)} chars")
    else:
        tally.chunks += chunks


async def soak(args: argparse.Namespace) -> Tally:
    tally = Tally()
    with (
        tempfile.TemporaryDirectory() as scratch,
        model_server(args.chunks, args.delay, tally) as (base_url, model_pid),
    ):
        project = Path(scratch) / "project"
        project.mkdir()
        runner = ["-m", "accord.cli"]
        env = {"OPENAI_API_KEY": "soak", "ACCORD_MODEL": "", "ACCORD_BASE_URL": ""}
        if args.probe is not None:  # measurements inside the agent (benchmarks/soak_probe.py)
            args.probe.mkdir(parents=True, exist_ok=True)
            runner = [str(Path(__file__).with_name("soak_probe.py"))]
            env["SOAK_PROBE_DIR"] = str(args.probe.resolve())
        command = [
            sys.executable,
            *runner,
            "serve",
            "--store",
            str(Path(scratch) / "sessions.sqlite3"),
            "--model",
            "openai:fake-model",
            "--base-url",
            base_url,
            *(["--context-window", str(args.window)] if args.window else []),
        ]
        async with connect(command, cwd=project, env=env) as connection:
            pid = agent_pid()
            sessions = [await connection.new_session(project) for _ in range(args.sessions)]
            tally.sessions_opened = len(sessions)
            async with anyio.create_task_group() as warm:  # every session has run a turn
                for index, session in enumerate(sessions):
                    warm.start_soon(one_turn, session, index, 0, args.chunks, tally)
            end = time.monotonic() + args.duration
            start = time.monotonic()
            tally.rss.append((0.0, rss_of(pid)))
            tally.load_at_start = os.getloadavg()
            tally.cpu.append((0.0, cpu_of(pid)))
            tally.bench_cpu.append(cpu_of(os.getpid()))
            tally.model_cpu.append(cpu_of(model_pid))
            streaming = [args.sessions]  # streams still running: the probes stop with the last

            def going() -> bool:
                return streaming[0] > 0 and time.monotonic() < end

            async def stream(index: int, session: ClientSession) -> None:
                turn = 1  # turn 0 was the warm-up
                try:
                    while going():
                        if args.turns_per_session and turn % args.turns_per_session == 0:
                            tally.conversations_completed += 1
                            if args.until_complete:
                                break  # this stream's conversation has all its turns
                            await session.close()  # the conversation is over: a new one starts
                            session = await connection.new_session(project)
                            tally.sessions_opened += 1
                        await one_turn(session, index, turn, args.chunks, tally)
                        turn += 1
                finally:
                    streaming[0] -= 1
                    per = args.turns_per_session  # turns done in the stream's last conversation:
                    tally.turns_reached.append((turn - 1) % per + 1 if per else turn)

            async def sample() -> None:
                while going():
                    await anyio.sleep(args.sample)
                    tally.rss.append((time.monotonic() - start, rss_of(pid)))
                    tally.cpu.append((time.monotonic() - start, cpu_of(pid)))
                    if args.probe is not None:
                        os.kill(pid, signal.SIGUSR1)  # the probe writes its stats

            async def list_sessions(conn: ConnectedAgent) -> None:
                while going():
                    began = time.perf_counter()
                    await conn.list_sessions()
                    tally.list_ms.append((time.perf_counter() - began) * 1000)
                    await anyio.sleep(0.2)

            async def control(conn: ConnectedAgent) -> None:
                while going():
                    began = time.perf_counter()
                    with contextlib.suppress(RequestError):
                        await conn.calls.ext_request("_soak/control", {})
                    tally.control_ms.append((time.perf_counter() - began) * 1000)
                    await anyio.sleep(0.2)

            with anyio.fail_after(args.duration + 120):
                async with anyio.create_task_group() as group:
                    for index, session in enumerate(sessions):
                        group.start_soon(stream, index, session)
                    group.start_soon(sample)
                    group.start_soon(list_sessions, connection)
                    group.start_soon(control, connection)
            tally.streaming_s = time.monotonic() - start
            tally.rss.append((tally.streaming_s, rss_of(pid)))
            tally.cpu.append((tally.streaming_s, cpu_of(pid)))
            tally.bench_cpu.append(cpu_of(os.getpid()))
            tally.model_cpu.append(cpu_of(model_pid))
    return tally


def report(args: argparse.Namespace, tally: Tally) -> bool:
    first, last = tally.rss[0][1], tally.rss[-1][1]
    peak = max(r for _, r in tally.rss)
    half = tally.rss[len(tally.rss) // 2][1]
    ms = sorted(tally.list_ms)
    p99 = ms[min(len(ms) - 1, int(len(ms) * 0.99))] if ms else float("nan")
    control = sorted(tally.control_ms)
    control_p99 = control[min(len(control) - 1, int(len(control) * 0.99))] if control else None
    growth = (last - first) / 1024 / 1024
    cpu = tally.cpu[-1][1] - tally.cpu[0][1]
    wall = max(tally.streaming_s, 1e-9)
    complete = not args.until_complete or tally.conversations_completed == args.sessions
    figures = {
        "duration_s": round(tally.streaming_s, 1),
        "until_complete": args.until_complete,
        "sessions": args.sessions,
        "turns_per_session": args.turns_per_session or None,
        "context_window": args.window,
        "compactions": tally.summaries,
        "sessions_opened": tally.sessions_opened,
        "conversations_completed": tally.conversations_completed,
        "last_conversation_turns_min": min(tally.turns_reached, default=0),
        "last_conversation_turns_max": max(tally.turns_reached, default=0),
        "turns_verified": tally.turns,
        "chunks_verified": tally.chunks,
        "lost_or_wrong_turns": len(tally.lost),
        "rss_after_warmup_mb": round(first / 1024 / 1024, 1),
        "rss_at_half_mb": round(half / 1024 / 1024, 1),
        "rss_end_mb": round(last / 1024 / 1024, 1),
        "rss_peak_mb": round(peak / 1024 / 1024, 1),
        "rss_growth_mb": round(growth, 1),
        "rss_growth_kb_per_turn": round(growth * 1024 / max(tally.turns - args.sessions, 1), 2),
        "session_list_calls": len(ms),
        "session_list_p50_ms": round(statistics.median(ms), 1) if ms else None,
        "session_list_p99_ms": round(p99, 1),
        "session_list_max_ms": round(ms[-1], 1) if ms else None,
        "control_p50_ms": round(statistics.median(control), 1) if control else None,
        "control_p99_ms": None if control_p99 is None else round(control_p99, 1),
        "rss_by_minute_mb": [
            round(r / 1024 / 1024, 1) for t, r in tally.rss if t == 0 or t % 60 < args.sample
        ],
        "agent_cpu_s": round(cpu, 1),
        "agent_cpu_share_of_one_core": round(cpu / wall, 2),
        "agent_cpu_ms_per_turn": round(cpu * 1000 / max(tally.turns, 1), 1),
        "client_cpu_share_of_one_core": round((tally.bench_cpu[-1] - tally.bench_cpu[0]) / wall, 2),
        "model_server_cpu_share_of_one_core": round(
            (tally.model_cpu[-1] - tally.model_cpu[0]) / wall, 2
        ),
        "load_average_at_start": [round(x, 2) for x in tally.load_at_start],
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(figures, indent=2))
    for problem in tally.lost[:10]:
        print(f"lost: {problem}", file=sys.stderr)
    ok = complete and not tally.lost and p99 <= args.list_p99_ms and growth <= args.max_growth_mb
    if not complete:
        print(
            f"only {tally.conversations_completed} of {args.sessions} conversations completed "
            f"{args.turns_per_session} turns in {args.duration:.0f} s",
            file=sys.stderr,
        )
    print("soak: OK" if ok else "soak: FAILED", file=sys.stderr)
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--duration", type=float, default=600.0, help="seconds of streaming")
    parser.add_argument("--sessions", type=int, default=50, help="concurrent sessions")
    parser.add_argument(
        "--turns-per-session",
        type=int,
        default=200,
        help="turns of one conversation before its session is closed and a new one opened "
        "in its place (0: one conversation per stream, growing for the whole run)",
    )
    parser.add_argument("--chunks", type=int, default=20, help="pieces per model reply")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds between pieces")
    parser.add_argument("--sample", type=float, default=5.0, help="seconds between RSS samples")
    parser.add_argument("--list-p99-ms", type=float, default=250.0, help="bound on the p99")
    parser.add_argument("--max-growth-mb", type=float, default=25.0, help="bound on RSS growth")
    parser.add_argument(
        "--until-complete",
        action="store_true",
        help="each stream runs one conversation of --turns-per-session turns and the run ends "
        "when all have (--duration is then the bound: exit 1 if they have not by then)",
    )
    parser.add_argument(
        "--probe",
        type=Path,
        default=None,
        help="run the agent under benchmarks/soak_probe.py, its stats in this directory",
    )
    parser.add_argument(
        "--window",
        type=int,
        default=None,
        metavar="TOKENS",
        help="the model's context window (accord serve --context-window): the coder compacts "
        "a conversation nearing it, as a model with a known window does; default: none known, "
        "no compaction, each conversation's whole history held",
    )
    parser.add_argument(
        "--hog",
        action="store_true",
        help="run two busy-looping processes beside it (load >= 2, as users' machines are)",
    )
    args = parser.parse_args()
    if args.until_complete and args.turns_per_session < 1:
        parser.error("--until-complete needs conversations of --turns-per-session turns")
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while 1: pass"])
        for _ in range(2 if args.hog else 0)
    ]
    try:
        tally = anyio.run(soak, args)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    sys.exit(0 if report(args, tally) else 1)


if __name__ == "__main__":
    main()
