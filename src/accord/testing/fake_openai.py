"""Run `FakeOpenAIServer` as its own process, for end-to-end tests that spawn `accord serve`.

    python -m accord.testing.fake_openai --script replies.json [--port-file PATH] [--port N]

The script file holds `{"replies": [...]}` (see `accord.testing.dump_script`). Once listening, the
process prints the port on a line of its own to stdout and, with `--port-file`, writes it to that
file (atomically: a reader never sees a partial number). It serves until SIGTERM or SIGINT, then
closes cleanly. The recorded requests are at `GET /_fake/requests`.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from ._fake_openai import FakeOpenAIServer
from ._fake_openai_script import load_script

__all__ = ("main",)


def main(argv: Sequence[str] | None = None) -> int:
    """Serve a script until SIGTERM / SIGINT; return the exit status.

    Raises:
        pydantic.ValidationError: The script file does not describe replies.
        OSError: The script cannot be read or the port cannot be bound.
    """
    parser = argparse.ArgumentParser(prog="python -m accord.testing.fake_openai")
    parser.add_argument("--script", required=True, type=Path, help="JSON file of scripted replies")
    parser.add_argument("--port-file", type=Path, help="write the bound port to this file")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--model", action="append", help="model id for GET /v1/models (repeatable)")
    args = parser.parse_args(argv)

    replies = load_script(args.script.read_bytes())
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    with FakeOpenAIServer(
        replies, models=args.model or ("fake-model",), host=args.host, port=args.port
    ) as server:
        if args.port_file is not None:
            partial = args.port_file.with_name(args.port_file.name + ".partial")
            partial.write_text(f"{server.port}\n", encoding="utf-8")
            os.replace(partial, args.port_file)
        print(server.port, flush=True)
        stop.wait()  # a signal interrupts the wait and its handler sets `stop`
    return 0


if __name__ == "__main__":
    sys.exit(main())
