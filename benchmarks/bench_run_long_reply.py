"""``accord run`` on a long reply: time per chunk at 10k, 100k and 1M chunks, piped.

The agent is ``_stream_agent.py`` (stdlib + orjson: a prompt "N" makes it write N
``agent_message_chunk`` notifications of 40 bytes of text in large writes), so the client
side is what is measured: ``accord run`` as a user runs it, a subprocess whose stdout is a
file, in its three output forms (the default display, ``--json`` lines, ``-q``). Each size
and form runs ``--rounds`` times, interleaved (sizes and forms alternate within a round);
the median and the spread (min-max) of the wall time per chunk are printed, with the peak
RSS of the ``accord run`` process. The time per chunk leaves out the fixed cost of a run
(start, connect, one-chunk turn, exit), measured by a one-chunk run of the same form in the
same round. Flat time per chunk from 10k to 1M is the target: a
per-chunk cost that grows with the reply (text accumulated by concatenation, say) shows as
a rising column.

Run: ``python benchmarks/bench_run_long_reply.py [--sizes 10000,100000,1000000] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
AGENT = f"{sys.executable} {HERE / '_stream_agent.py'}"
FORMS: dict[str, list[str]] = {"display": [], "json": ["--json"], "quiet": ["-q"]}


def run_once(size: int, form: str, out: Path) -> tuple[float, float]:
    """Run ``accord run`` once; return (seconds, peak RSS in MiB of that child)."""
    command = [sys.executable, "-m", "accord.cli", "run", *FORMS[form], "--agent", AGENT, str(size)]
    with out.open("wb") as sink:
        started = time.perf_counter()
        child = subprocess.Popen(command, stdout=sink, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        elapsed = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"accord run {form} {size} failed with {status}")
    written = out.stat().st_size
    if written < size * 40 and size > 1:
        raise SystemExit(f"accord run {form} {size}: only {written} bytes written")
    return elapsed, usage.ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    times: dict[tuple[int, str], list[float]] = {}
    peaks: dict[tuple[int, str], float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        for _ in range(args.rounds):
            fixed = {form: run_once(1, form, out)[0] for form in FORMS}
            for size in sizes:
                for form in FORMS:
                    seconds, peak = run_once(size, form, out)
                    per_chunk = max(seconds - fixed[form], 0.0) / size * 1e6
                    times.setdefault((size, form), []).append(per_chunk)
                    peaks[size, form] = max(peaks.get((size, form), 0.0), peak)
    print(f"load average at the end: {os.getloadavg()[0]:.1f}")
    print(f"{'chunks':>9} {'form':>8} {'us/chunk median':>16} {'spread':>15} {'peak RSS':>9}")
    for size in sizes:
        for form in FORMS:
            values = times[size, form]
            spread = f"{min(values):.2f}-{max(values):.2f}"
            print(
                f"{size:>9} {form:>8} {statistics.median(values):>16.2f} {spread:>15}"
                f" {peaks[size, form]:>7.0f}MB"
            )


if __name__ == "__main__":
    main()
