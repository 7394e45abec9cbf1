"""A hostile model: tool calls that attack a coding agent, and a workspace full of traps.

A coding agent trusts neither its model nor the files of the project it works in. This kit
lets a test play the worst of both against a real engine, offline, through the real model
provider code (the calls come from :class:`~accord.testing.FakeOpenAIServer`):

* :class:`HostileWorkspace` builds a project next to a directory "outside" it that holds a
  secret, and fills the project with traps: links to the secret (a file and a directory), a
  link to ``/dev/zero``, a named pipe (FIFO), a link loop, a file whose line makes a
  backtracking regular expression take forever, a large sparse file, and an ``AGENTS.md``
  that is a link out of the project (:meth:`HostileWorkspace.plant_notes`).
* :func:`hostile_calls` is the catalogue of attacks on the coder's tools (``read_file``,
  ``grep``, ``find_files``, ``list_directory``, ``write_file``, ``edit_file``,
  ``run_command``): path escapes through ``..``, absolute paths and links, special files,
  backtracking and huge patterns, NUL characters, enormous arguments, arguments that are not
  JSON or do not fit the tool, unknown tools. Each :class:`HostileCall` says what it tries.
* :class:`HostileModel` is a reply function for the fake server that makes one hostile call
  per model request, in order, then answers with text; it records what the agent answered to
  each call (:attr:`HostileModel.answers`), so a test can check every answer, and
  :meth:`HostileWorkspace.leaks` whether the secret reached the model anywhere.

Typical use, with the coder (any engine on an OpenAI-compatible API works the same way)::

    workspace = HostileWorkspace.create(tmp_path)
    model = HostileModel(hostile_calls(workspace))
    with FakeOpenAIServer(model) as server:
        ...  # run a turn of your agent in workspace.project against server.base_url
    assert model.finished
    for request in server.requests:
        assert not workspace.leaks(json.dumps(request.body))

Nothing here imports pytest or an engine. POSIX only (FIFOs, ``/dev/zero``).
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

from ._fake_openai_script import ScriptedReply, ScriptedToolCall

__all__ = (
    "BACKTRACKING_PATTERN",
    "HostileAnswer",
    "HostileCall",
    "HostileModel",
    "HostileWorkspace",
    "hostile_calls",
)

BACKTRACKING_PATTERN: Final = "(a|aa)*c"
"""A pattern a backtracking engine takes exponential time on, over a line of ``a``: with 40 of
them, Python's ``re`` runs for minutes (holding the GIL); a linear-time engine for microseconds."""

_SPARSE_BYTES: Final = 3 * 1024 * 1024 * 1024
"""The size of ``huge.log`` in :class:`HostileWorkspace`: sparse, it costs no disk, only the
memory of a reader that reads it whole."""


@dataclass(frozen=True, slots=True, kw_only=True)
class HostileCall:
    """One attack: a tool call with hostile arguments.

    Attributes:
        name: A short id for the attack (``"grep-link-out"``), unique in a catalogue.
        tool: The tool name the model calls (it may be one the agent does not have).
        arguments: The arguments: a mapping (sent as JSON) or a string sent verbatim, so it
            can be invalid JSON.
        threat: What the call tries, in a sentence.
        mutating: The call would change something (agents may ask permission first, or not
            offer the tool in a read-only mode).
    """

    name: str
    tool: str
    arguments: str | Mapping[str, Any]
    threat: str
    mutating: bool = False

    def to_tool_call(self, call_id: str) -> ScriptedToolCall:
        """The scripted tool call the fake server streams."""
        return ScriptedToolCall(name=self.tool, arguments=self.arguments, id=call_id, pieces=2)


@dataclass(frozen=True, slots=True)
class HostileWorkspace:
    """A project full of traps, and a directory outside it holding a secret.

    Attributes:
        project: The project directory (the session's ``cwd``).
        outside: A directory next to it, outside the workspace.
        secret: A random marker written only outside; it must never reach the model.
    """

    project: Path
    outside: Path
    secret: str

    @classmethod
    def create(cls, base: Path) -> HostileWorkspace:
        """Build ``base/project`` (with its traps) and ``base/outside`` (with the secret).

        The project holds: ``src/app.py`` (an ordinary file), ``secret-link.txt`` (a link
        to the secret file), ``outside-dir`` (a link to the outside directory), ``zero``
        (a link to ``/dev/zero``), ``pipe`` (a FIFO nobody writes to), ``loop`` (a link to
        the project itself), ``backtrack.txt`` (a line of 40 ``a``) and ``huge.log`` (a
        3 GiB sparse file beginning with text).
        """
        project = base / "project"
        outside = base / "outside"
        (project / "src").mkdir(parents=True)
        outside.mkdir(parents=True)
        secret = f"accord-hostile-secret-{secrets.token_hex(8)}"
        (outside / "secret.txt").write_text(f"{secret}\n")
        (outside / "nested.txt").write_text(f"nested {secret}\n")
        (project / "src" / "app.py").write_text("def main():\n    return 'hello'\n")
        (project / "README.md").write_text("# hostile project\n")
        (project / "secret-link.txt").symlink_to(outside / "secret.txt")
        (project / "outside-dir").symlink_to(outside, target_is_directory=True)
        (project / "zero").symlink_to("/dev/zero")
        os.mkfifo(project / "pipe")
        (project / "loop").symlink_to(project, target_is_directory=True)
        (project / "backtrack.txt").write_text("a" * 40 + "\n")
        with open(project / "huge.log", "wb") as file:
            file.write(b"log start\n")
            file.truncate(_SPARSE_BYTES)
        return cls(project, outside, secret)

    def plant_notes(self, kind: str) -> Path:
        """Make the project's ``AGENTS.md`` a trap; returns its path.

        Args:
            kind: ``"link-out"`` (a link to the secret, outside), ``"fifo"`` (a named pipe:
                reading it waits forever), or ``"zero"`` (a link to ``/dev/zero``).

        Raises:
            ValueError: an unknown kind.
        """
        notes = self.project / "AGENTS.md"
        if notes.is_symlink() or notes.exists():
            notes.unlink()
        if kind == "link-out":
            notes.symlink_to(self.outside / "secret.txt")
        elif kind == "fifo":
            os.mkfifo(notes)
        elif kind == "zero":
            notes.symlink_to("/dev/zero")
        else:
            raise ValueError(f"unknown AGENTS.md trap {kind!r}; use link-out, fifo or zero")
        return notes

    def leaks(self, text: str) -> bool:
        """Whether ``text`` (a request to the model, an answer) contains the secret."""
        return self.secret in text


def hostile_calls(workspace: HostileWorkspace) -> tuple[HostileCall, ...]:
    """The catalogue of attacks on a coding agent's tools, aimed at ``workspace``'s traps.

    The read-only attacks come first (``mutating=False``), then those that would write or run
    something. None of them may leak :attr:`HostileWorkspace.secret`, hang, read without
    bound, or end the agent's turn with a crash.
    """
    outside = str(workspace.outside)
    secret_file = str(workspace.outside / "secret.txt")
    huge = "x" * 200_000
    calls = [
        HostileCall(
            name="read-dotdot",
            tool="read_file",
            arguments={"path": "../outside/secret.txt"},
            threat="climb out of the project with ..",
        ),
        HostileCall(
            name="read-absolute",
            tool="read_file",
            arguments={"path": secret_file},
            threat="read an absolute path outside the project",
        ),
        HostileCall(
            name="read-link-out",
            tool="read_file",
            arguments={"path": "secret-link.txt"},
            threat="read through a link that leads out",
        ),
        HostileCall(
            name="read-through-dir-link",
            tool="read_file",
            arguments={"path": "outside-dir/secret.txt"},
            threat="read through a directory link that leads out",
        ),
        HostileCall(
            name="read-dev-zero",
            tool="read_file",
            arguments={"path": "zero"},
            threat="read a link to /dev/zero, which never ends",
        ),
        HostileCall(
            name="read-fifo",
            tool="read_file",
            arguments={"path": "pipe"},
            threat="read a FIFO, which waits for a writer forever",
        ),
        HostileCall(
            name="read-huge",
            tool="read_file",
            arguments={"path": "huge.log"},
            threat="read a 3 GiB file into memory",
        ),
        HostileCall(
            name="read-nul",
            tool="read_file",
            arguments={"path": "src/app.py\x00../../outside/secret.txt"},
            threat="a NUL character in a path",
        ),
        HostileCall(
            name="read-enormous-path",
            tool="read_file",
            arguments={"path": "a/" * 50_000},
            threat="a path of 100,000 characters",
        ),
        HostileCall(
            name="read-home",
            tool="read_file",
            arguments={"path": "~/.ssh/id_rsa"},
            threat="a path starting with ~",
        ),
        HostileCall(
            name="grep-everything",
            tool="grep",
            arguments={"pattern": "secret|nested|log", "path": "."},
            threat="search the project: links out, /dev/zero, the FIFO, the loop, the huge file",
        ),
        HostileCall(
            name="grep-outside",
            tool="grep",
            arguments={"pattern": ".", "path": outside},
            threat="search a directory outside the project",
        ),
        HostileCall(
            name="grep-fifo",
            tool="grep",
            arguments={"pattern": "x", "path": "pipe"},
            threat="search a FIFO by name",
        ),
        HostileCall(
            name="grep-backtracking",
            tool="grep",
            arguments={"pattern": BACKTRACKING_PATTERN, "path": "backtrack.txt"},
            threat="a pattern that takes a backtracking engine minutes",
        ),
        HostileCall(
            name="grep-backreference",
            tool="grep",
            arguments={"pattern": r"(a)\1", "path": "."},
            threat="a back-reference, which a linear-time engine cannot run",
        ),
        HostileCall(
            name="grep-huge-pattern",
            tool="grep",
            arguments={"pattern": "(" * 2_000 + "a" + ")" * 2_000},
            threat="a pattern nested 2,000 deep",
        ),
        HostileCall(
            name="grep-enormous-pattern",
            tool="grep",
            arguments={"pattern": huge},
            threat="a pattern of 200,000 characters",
        ),
        HostileCall(
            name="grep-many-globstars",
            tool="grep",
            arguments={"pattern": "x", "include": "**/" * 40 + "*.none"},
            threat="an include glob whose naive matching is exponential",
        ),
        HostileCall(
            name="find-everything",
            tool="find_files",
            arguments={"pattern": "**/*"},
            threat="list the tree through links out and loops",
        ),
        HostileCall(
            name="list-outside",
            tool="list_directory",
            arguments={"path": "outside-dir"},
            threat="list a directory through a link that leads out",
        ),
        HostileCall(
            name="invalid-json",
            tool="read_file",
            arguments='{"path": "README.md"',
            threat="arguments that are not valid JSON",
        ),
        HostileCall(
            name="wrong-types",
            tool="read_file",
            arguments={"path": ["README.md"], "offset": "first"},
            threat="arguments of the wrong types",
        ),
        HostileCall(
            name="unknown-tool",
            tool="delete_everything",
            arguments={"path": "/"},
            threat="a tool the agent does not have",
        ),
        HostileCall(
            name="write-outside",
            tool="write_file",
            arguments={"path": "../outside/planted.txt", "content": "planted"},
            threat="write a file outside the project",
            mutating=True,
        ),
        HostileCall(
            name="write-through-link",
            tool="write_file",
            arguments={"path": "secret-link.txt", "content": "overwritten"},
            threat="overwrite the outside file through a link",
            mutating=True,
        ),
        HostileCall(
            name="write-fifo",
            tool="write_file",
            arguments={"path": "pipe", "content": "x"},
            threat="write to a FIFO, which waits for a reader forever",
            mutating=True,
        ),
        HostileCall(
            name="edit-through-dir-link",
            tool="edit_file",
            arguments={
                "path": "outside-dir/nested.txt",
                "old_text": "nested",
                "new_text": "changed",
            },
            threat="edit the outside file through a directory link",
            mutating=True,
        ),
        HostileCall(
            name="command-cwd-outside",
            tool="run_command",
            arguments={"command": "pwd", "cwd": outside},
            threat="run a command in a directory outside the project",
            mutating=True,
        ),
        HostileCall(
            name="command-nul",
            tool="run_command",
            arguments={"command": "echo a\x00b"},
            threat="a NUL character in a command line",
            mutating=True,
        ),
        HostileCall(
            name="command-huge-output",
            tool="run_command",
            arguments={"command": "head -c 5000000 /dev/zero | tr '\\0' x"},
            threat="a command printing 5 MB",
            mutating=True,
        ),
    ]
    return tuple(calls)


@dataclass(frozen=True, slots=True)
class HostileAnswer:
    """What the agent answered to one hostile call: the text the model read back.

    Attributes:
        call: The attack.
        text: The tool message's content (a result, or the refusal/retry message).
    """

    call: HostileCall
    text: str


@dataclass
class HostileModel:
    """A reply function for :class:`~accord.testing.FakeOpenAIServer`: one attack per request.

    The ``n``-th model request of a turn (counting the tool answers it already carries) gets
    the ``n``-th call of ``calls``; once every call was answered the model says
    ``final_text`` and the turn can end. Thread-safe (the server answers in its threads).

    Attributes:
        calls: The attacks, in order.
        final_text: The model's last message.
    """

    calls: Sequence[HostileCall]
    final_text: str = "Done."
    _answers: dict[str, str] = field(default_factory=dict[str, str], init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __call__(self, body: dict[str, Any]) -> ScriptedReply:
        """Pick the reply to one chat-completions request."""
        messages = body.get("messages")
        answered = [
            cast(dict[str, Any], m)
            for m in (cast(list[object], messages) if isinstance(messages, list) else [])
            if isinstance(m, dict) and cast(dict[str, Any], m).get("role") == "tool"
        ]
        with self._lock:
            for message in answered:
                call_id = str(message.get("tool_call_id", ""))
                if call_id.startswith("hostile-") and call_id not in self._answers:
                    self._answers[call_id] = _content_text(message.get("content"))
            done = len(self._answers)
        if done >= len(self.calls):
            return ScriptedReply(text=[self.final_text])
        call = self.calls[done]
        return ScriptedReply(tool_calls=[call.to_tool_call(f"hostile-{done}-{call.name}")])

    @property
    def answers(self) -> tuple[HostileAnswer, ...]:
        """The agent's answer to each call answered so far, in the order of :attr:`calls`."""
        with self._lock:
            found = dict(self._answers)
        result: list[HostileAnswer] = []
        for number, call in enumerate(self.calls):
            text = found.get(f"hostile-{number}-{call.name}")
            if text is not None:
                result.append(HostileAnswer(call, text))
        return tuple(result)

    def answer(self, name: str) -> str:
        """The text the model read back for the call named ``name``.

        Raises:
            KeyError: that call was not answered (or is not in :attr:`calls`).
        """
        for answer in self.answers:
            if answer.call.name == name:
                return answer.text
        raise KeyError(f"no answer to the hostile call {name!r}")

    @property
    def finished(self) -> bool:
        """Every call was answered."""
        return len(self.answers) == len(self.calls)


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [
            str(cast(dict[str, Any], part).get("text", ""))
            for part in cast(list[object], content)
            if isinstance(part, dict)
        ]
        return "".join(parts)
    return "" if content is None else str(content)
