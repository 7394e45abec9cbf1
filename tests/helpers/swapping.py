"""A tree whose directory another process keeps swapping for a symlink (rename-exchange races).

:func:`swapping_tree` makes ``root/d`` (holding ``f.txt`` = ``"inside"``) and ``outside``
(holding ``f.txt`` = ``"outside"``), and a separate process exchanging ``root/d`` with the
symlink ``root/swap`` -> ``outside`` (``renameat2(RENAME_EXCHANGE)``, atomically, as fast as
it can) until the test calls ``stop``. Used by the client's file host race tests and the
coder's file tools race tests: whatever the tree does, nothing may be read or written outside.
Linux only (the caller skips elsewhere); skips on a file system without the exchange.
"""

from __future__ import annotations

import ctypes
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

SWAPPER = r"""
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
a, b = sys.argv[1].encode(), sys.argv[2].encode()
print("ready", flush=True)
while True:
    if libc.renameat2(-100, a, -100, b, 2) != 0:  # AT_FDCWD, RENAME_EXCHANGE
        raise SystemExit(f"renameat2 failed: errno {ctypes.get_errno()}")
"""


def _has_rename_exchange(directory: Path) -> bool:
    libc = ctypes.CDLL(None, use_errno=True)
    (directory / "x").mkdir()
    (directory / "y").mkdir()
    ok = libc.renameat2(-100, str(directory / "x").encode(), -100, str(directory / "y").encode(), 2)
    (directory / "x").rmdir()
    (directory / "y").rmdir()
    return ok == 0


@contextmanager
def swapping_tree(
    tmp_path: Path, *, relative: bool
) -> Iterator[tuple[Path, Path, Callable[[], None]]]:
    """(root, outside, stop): ``root/d`` swaps places with a symlink to ``outside`` until stop.

    ``relative``: the symlink's target is ``../outside`` rather than an absolute path."""
    root = tmp_path / "project"
    outside = tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    if not _has_rename_exchange(root):
        pytest.skip("this file system cannot exchange names atomically")
    (root / "d").mkdir()
    (root / "d" / "f.txt").write_text("inside")
    (outside / "f.txt").write_text("outside")
    target = Path("..") / "outside" if relative else outside
    (root / "swap").symlink_to(target)
    swapper = subprocess.Popen(
        [sys.executable, "-c", SWAPPER, str(root / "d"), str(root / "swap")],
        stdout=subprocess.PIPE,
        text=True,
    )

    def stop() -> None:
        if swapper.poll() is None:
            swapper.kill()
        assert swapper.wait() == -9, "the swapper stopped on its own (renameat2 failed)"
        if swapper.stdout is not None:
            swapper.stdout.close()

    try:
        assert swapper.stdout is not None and swapper.stdout.readline() == "ready\n"
        yield root, outside, stop
    finally:
        stop()
