"""Checking the directories a client names for a session (``cwd``, ``additionalDirectories``).

ACP requires every such path to be absolute. The runtime also refuses, before anything is
stored or opened, a path holding a NUL character (no file has one; the OS would raise on it
much later, far from the request) and a ``cwd`` that is not an existing directory on this
machine: the session's tools and commands run there, and a made-up ``cwd`` would only fail
later, turn after turn, with errors far from their cause. Each refusal is an
:class:`~accord.errors.InvalidParams` (-32602) whose message names the field, the path and
the problem, and whose ``data`` lists them (``{"errors": [{"field", "problem", "value"}]}``).

Load and resume check the ``cwd`` the client sends, which must equal the stored one: a
session whose directory has since been removed or moved cannot be loaded or resumed (its
history stays stored, untouched; it lists as before; recreating the directory, or forking it
into an existing one, makes it usable again). The message says so.

Above: :mod:`._sessions`. Below: :mod:`os`, in a worker thread (a ``stat`` on a network
mount may take its time; the event loop does not wait for it).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Sequence

import anyio.to_thread

from ..errors import InvalidParams

__all__ = ("check_absolute", "check_working_directory")


def _refuse(field: str, path: str, problem: str, advice: str = "") -> InvalidParams:
    return InvalidParams(
        f"{field} {path!r} {problem}{advice}",
        {"errors": [{"field": field, "problem": problem, "value": path}]},
    )


def check_absolute(field: str, paths: Sequence[str]) -> None:
    """Refuse a path that is relative or holds a NUL character (ACP requires absolute paths).

    Raises:
        InvalidParams: one of ``paths`` is not absolute, or contains a NUL (-32602).
    """
    for path in paths:
        if "\0" in path:
            raise _refuse(field, path, "contains a NUL character")
        if not os.path.isabs(path):
            raise _refuse(field, path, "is not an absolute path")


def _problem(path: str) -> str | None:
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return "does not exist"
    except NotADirectoryError:
        return "does not exist (a component of it is not a directory)"
    except PermissionError:
        return "cannot be reached (permission denied)"
    except OSError as exc:
        return f"cannot be reached ({exc.strerror or exc})"
    return None if stat.S_ISDIR(mode) else "is not a directory"


async def check_working_directory(path: str, *, stored: bool = False) -> None:
    """Refuse a ``cwd`` that is not an absolute path to an existing directory.

    Args:
        path: the ``cwd`` of the request.
        stored: the session is a stored one (load, resume): the message says its history
            is kept and how to use it again.

    Raises:
        InvalidParams: relative, holds a NUL, missing, not a directory, or unreachable (-32602).
    """
    check_absolute("cwd", [path])
    problem = await anyio.to_thread.run_sync(_problem, path)
    if problem is None:
        return
    advice = (
        "; the session is still stored with its history: recreate the directory to load "
        "or resume it, or fork it into an existing directory"
        if stored
        else ""
    )
    raise _refuse("cwd", path, problem, advice)
