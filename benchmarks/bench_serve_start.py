"""Cold start of ``accord serve``: from spawn to the ``initialize`` answer.

``accord serve --model openai:gpt-4o`` (the coder, a SQLite store in a temporary directory) is
spawned ``--starts`` times per variant, alternating, and the time from spawn to the answer of
``initialize`` is taken (median, min, max):

* ``cold cache``: the prompt-capabilities cache (``coder/_prompt_cache.py``) is deleted before
  each spawn, so ``initialize`` waits for pydantic-ai to be imported and the model's profile
  read: what every start cost before the cache, and what a first start with a new
  configuration costs now;
* ``warm cache``: the cache holds this configuration: ``initialize`` is answered before any
  model code is imported (it then loads in a worker thread);
* ``no model``: ``accord serve`` without a model (``ACCORD_MODEL`` emptied): nothing of the
  model code is ever loaded, the floor a warm start can reach.

``--src DIR`` runs the agent from another checkout's ``src`` (``PYTHONPATH``), e.g. to measure
main before a change side by side. Print the load average with the figures (``/proc/loadavg``).

Run: ``python benchmarks/bench_serve_start.py [--starts 7] [--src ../main/src]``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import anyio

from accord.roles import Client, ClientSideConnection
from accord.transports import spawn_agent

MODEL = "openai:gpt-4o"


class _Quiet(Client):
    """A client that is only asked to initialize."""


async def _one_start(
    directory: Path, env: dict[str, str], *, cold: bool, model: bool = True
) -> float:
    cache = directory / "data" / "accord" / "prompt-support.json"
    if cold:
        cache.unlink(missing_ok=True)
    store = directory / "sessions.sqlite3"
    command = [sys.executable, "-m", "accord.cli", "serve", "--store", str(store)]
    if model:
        command += ["--model", MODEL]
    started = time.perf_counter()
    async with (
        spawn_agent(command, cwd=directory, env=env) as transport,
        ClientSideConnection(_Quiet(), transport) as conn,
    ):
        await conn.initialize()
        return time.perf_counter() - started


def _summary(name: str, times: list[float]) -> str:
    return (
        f"{name:<11} median {statistics.median(times):.3f} s  "
        f"min {min(times):.3f}  max {max(times):.3f}  (n={len(times)})"
    )


async def _main(starts: int, src: Path | None) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        env = {
            "XDG_DATA_HOME": str(directory / "data"),
            "XDG_CONFIG_HOME": str(directory / "config"),  # no saved model either
            "OPENAI_API_KEY": "bench",
            "ACCORD_MODEL": "",
        }
        if src is not None:
            env["PYTHONPATH"] = str(src)
        await _one_start(directory, env, cold=False)  # byte-compile, fill the cache
        results: dict[str, list[float]] = {"cold cache": [], "warm cache": [], "no model": []}
        for _ in range(starts):
            results["cold cache"].append(await _one_start(directory, env, cold=True))
            results["warm cache"].append(await _one_start(directory, env, cold=False))
            results["no model"].append(await _one_start(directory, env, cold=False, model=False))
    return results


def main() -> None:
    """Parse the arguments and run the comparison."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=7)
    parser.add_argument("--src", help="run the agent from this checkout's src (PYTHONPATH)")
    args = parser.parse_args()
    src = None if args.src is None else Path(args.src).resolve()
    print(f"loadavg before {Path('/proc/loadavg').read_text().strip()}; {os.cpu_count()} cores")
    results = anyio.run(_main, args.starts, src)
    print(f"accord serve --model {MODEL}, spawn to initialize answered; src={src or 'installed'}")
    for variant, times in results.items():
        print(_summary(variant, times))
    print(f"loadavg after {Path('/proc/loadavg').read_text().strip()}")


if __name__ == "__main__":
    main()
