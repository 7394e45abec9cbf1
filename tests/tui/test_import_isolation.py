"""Textual is optional: only ``accord chat`` imports it (checked in fresh interpreters)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from helpers.timeouts import TIMEOUT

pytestmark = pytest.mark.subprocess


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


def test_the_cli_and_accord_run_do_not_import_textual() -> None:
    done = run_python(
        """
        import sys
        import accord.cli
        from accord.cli._main import build_parser, main

        build_parser().parse_args(["chat", "--cwd", "."])
        code = main(["run", "--agent", sys.executable + " -c pass", "hello"])
        prefixes = ("textual.", "textual_diff_view", "accord.tui")
        loaded = sorted(n for n in sys.modules if n == "textual" or n.startswith(prefixes))
        print(code, loaded)
        """
    )
    assert done.stdout.strip() == "3 []", done.stderr


def test_accord_chat_without_textual_says_which_extra_to_install() -> None:
    done = run_python(
        """
        import sys
        sys.modules["textual"] = None  # as if the tui extra were not installed
        from accord.cli._main import main
        print(main(["chat"]))
        """
    )
    assert done.stdout.strip() == "1"
    assert "pip install 'accord[tui]'" in done.stderr
