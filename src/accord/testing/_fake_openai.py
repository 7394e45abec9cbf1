"""A scripted, OpenAI-compatible model server on loopback, for offline tests.

`FakeOpenAIServer` answers `POST /v1/chat/completions` and `POST /v1/responses` (the Responses
API, :mod:`._fake_responses`) from a script: a list of `ScriptedReply` objects consumed in order
(one per request, whichever endpoint it came to), or a function that picks the reply from the
request body. It speaks enough of the real API that the `openai` SDK, and pydantic-ai's OpenAI
models on top of it, run their normal code paths: server-sent events (`data: {...}` frames, then
`data: [DONE]`; the Responses API's typed events) over HTTP/1.1 chunked transfer encoding when
the request says `"stream": true`, one JSON body otherwise. The same machinery answers the
Anthropic Messages API for `FakeAnthropicServer` (:mod:`._fake_anthropic`).

The stdlib `ThreadingHTTPServer` runs in a daemon thread, one thread per connection. Every wait
inside a reply (a delay between chunks, a hang) wakes up when the client goes away or the server
closes, so nothing outlives `close()` by more than `_POLL_INTERVAL`.

Requests marked with :data:`~accord.agent.MODEL_PURPOSE_HEADER` (an engine's side requests,
such as the coder's session title) are answered from `side_scripts[purpose]` instead of the
script, and recorded apart (`side_requests`): they never take a turn's scripted reply, and a
purpose without a script is answered 400 (so the engine takes its fallback).

Besides the chat endpoint: `GET /v1/models` lists `models` (with whatever fields
`model_info` gives each, such as vLLM's `max_model_len` or llama.cpp's `meta`), `routes`
answers other paths with fixed JSON (llama.cpp's `GET /props`, Ollama's `POST /api/show`, ...;
`info_requests` records what was asked of them and of `/v1/models`), and `GET /_fake/requests`
returns the recorded requests as JSON, for tests that run the server in another process
(`python -m accord.testing.fake_openai`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import select
import socket
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Literal, NoReturn, Self, TypeAlias, cast

from ..engines import MODEL_PURPOSE_HEADER
from ._fake_messages import MessagesFrames, anthropic_error
from ._fake_openai_script import Frames, ReplyFunction, Script, ScriptedError, ScriptedReply
from ._fake_responses import ResponsesFrames

_POLL_INTERVAL = 0.02
"""How often a waiting reply checks for a closed server or a departed client (seconds)."""

_COALESCE_BYTES = 64 * 1024
"""Without delays, frames are written in batches of about this size: the server must never be the
bottleneck of a throughput benchmark, and real servers coalesce writes too."""

_JOIN_TIMEOUT = 5.0
"""How long `close()` waits for each server thread; they all poll at `_POLL_INTERVAL`."""

Endpoint: TypeAlias = Literal["chat", "responses", "messages"]
"""A model API the fake answers: OpenAI chat completions (`POST .../chat/completions`), OpenAI
Responses (`POST .../responses`), Anthropic Messages (`POST .../messages`: the Anthropic
fake)."""

_ENDPOINT_PATHS: Mapping[str, Endpoint] = {
    "/chat/completions": "chat",
    "/responses": "responses",
    "/messages": "messages",
}

_RENDERERS: Mapping[Endpoint, type[Frames] | type[ResponsesFrames] | type[MessagesFrames]] = {
    "chat": Frames,
    "responses": ResponsesFrames,
    "messages": MessagesFrames,
}

Outcome: TypeAlias = Literal[
    "pending", "completed", "disconnected", "timed_out", "aborted", "error"
]
"""How a recorded request ended.

`pending` (still being answered), `completed` (whole reply sent), `disconnected` (the client went
away before the end), `timed_out` (a hang reached `hang_timeout`; the connection was dropped),
`aborted` (the server closed mid-reply), `error` (an error status was sent).
"""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecordedRequest:
    """A snapshot of one model request the server received.

    Attributes:
        index: 0-based position among the model requests.
        method: The HTTP method.
        path: The request path.
        headers: Request headers, names lower-cased.
        body: The parsed JSON body (`None` if it was not JSON).
        outcome: How answering it went, at the time of the snapshot.
    """

    index: int
    method: str
    path: str
    headers: Mapping[str, str]
    body: Any
    outcome: Outcome

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The `messages` of the body (empty if absent)."""
        body: object = self.body
        if isinstance(body, dict):
            messages = cast(dict[str, Any], body).get("messages")
            if isinstance(messages, list):
                return cast(list[dict[str, Any]], messages)
        return []


@dataclass(slots=True)
class _State:
    """Everything the handler threads share, guarded by `condition`."""

    script: Script
    models: tuple[str, ...]
    endpoints: frozenset[Endpoint] = frozenset({"chat", "responses"})
    name: str = "FakeOpenAIServer"
    model_info: Mapping[str, Mapping[str, Any]] = field(
        default_factory=dict[str, Mapping[str, Any]]
    )
    routes: Mapping[str, Any] = field(default_factory=dict[str, Any])
    info_requests: list[tuple[str, str]] = field(default_factory=list[tuple[str, str]])
    condition: threading.Condition = field(default_factory=threading.Condition)
    closing: threading.Event = field(default_factory=threading.Event)
    records: list[RecordedRequest] = field(default_factory=list[RecordedRequest])
    errors: list[BaseException] = field(default_factory=list[BaseException])
    next_reply: int = 0
    side_scripts: Mapping[str, Sequence[ScriptedReply]] = field(
        default_factory=dict[str, Sequence[ScriptedReply]]
    )
    side_records: list[RecordedRequest] = field(default_factory=list[RecordedRequest])
    side_next: dict[str, int] = field(default_factory=dict[str, int])
    connections: dict[socket.socket, threading.Thread] = field(
        default_factory=dict[socket.socket, threading.Thread]
    )

    def record(
        self, method: str, path: str, headers: Mapping[str, str], body: Any, *, side: bool = False
    ) -> int:
        with self.condition:
            records = self.side_records if side else self.records
            index = len(records)
            records.append(
                RecordedRequest(
                    index=index,
                    method=method,
                    path=path,
                    headers=headers,
                    body=body,
                    outcome="pending",
                )
            )
            self.condition.notify_all()
            return index

    def finish(self, index: int, outcome: Outcome, *, side: bool = False) -> None:
        with self.condition:
            records = self.side_records if side else self.records
            records[index] = dataclasses.replace(records[index], outcome=outcome)
            self.condition.notify_all()

    def pick_side(self, purpose: str) -> ScriptedReply | ScriptedError:
        with self.condition:
            script = self.side_scripts.get(purpose, ())
            position = self.side_next.get(purpose, 0)
            if position >= len(script):
                return ScriptedError(
                    status=400,
                    message=f"{self.name}: no reply scripted for a {purpose!r} request",
                    type="fake_script_exhausted",
                )
            self.side_next[purpose] = position + 1
            return script[position]

    def pick(self, body: dict[str, Any]) -> ScriptedReply | ScriptedError:
        script = self.script
        if callable(script):
            entry: ScriptedReply | ReplyFunction = script
        else:
            with self.condition:
                if self.next_reply >= len(script):
                    return ScriptedError(
                        status=400,
                        message=f"{self.name}: script exhausted after {len(script)} replies",
                        type="fake_script_exhausted",
                    )
                entry = script[self.next_reply]
                self.next_reply += 1
        if isinstance(entry, ScriptedReply):
            return entry
        try:
            return entry(body)
        except Exception as exc:
            with self.condition:
                self.errors.append(exc)
            return ScriptedError(
                status=400,
                message=f"{self.name}: reply function raised {exc!r}",
                type="fake_reply_function_error",
            )


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], state: _State) -> None:
        self.state = state
        super().__init__(address, _Handler)


class _ClientGone(Exception):
    """The client closed the connection (or the server is closing) in the middle of a reply."""

    def __init__(self, outcome: Outcome) -> None:
        super().__init__(outcome)
        self.outcome: Outcome = outcome


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    _endpoint: Endpoint = "chat"

    @property
    def _state(self) -> _State:
        return cast(_HTTPServer, self.server).state

    def setup(self) -> None:
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self._state.condition:
            self._state.connections[self.connection] = threading.current_thread()

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            with self._state.condition:
                self._state.connections.pop(self.connection, None)

    def log_message(self, format: str, *args: Any) -> None:
        """Keep test output clean."""

    # -- routing ---------------------------------------------------------------------------------

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in self._state.routes:
            self._answer_route(path)
        elif path.endswith("/models"):
            self._note_info_request(path)
            created = 1_700_000_000
            state = self._state
            data = [
                {
                    "id": m,
                    "object": "model",
                    "created": created,
                    "owned_by": "accord-fake",
                    **state.model_info.get(m, {}),
                }
                for m in state.models
            ]
            self._send_json(200, {"object": "list", "data": data})
        elif path == "/_fake/requests":
            with self._state.condition:
                records = [asdict(r) for r in self._state.records]
            self._send_json(200, records)
        else:
            self._send_error(ScriptedError(status=404, message=f"no route {self.path}"))

    def do_POST(self) -> None:
        length = self.headers.get("content-length")
        if length is None:
            self._send_error(ScriptedError(status=411, message="Content-Length required"))
            self.close_connection = True
            return
        raw = self.rfile.read(int(length))
        path = self.path.split("?", 1)[0].rstrip("/")
        if path in self._state.routes:
            self._answer_route(path)
            return
        endpoint = next(
            (kind for suffix, kind in _ENDPOINT_PATHS.items() if path.endswith(suffix)), None
        )
        if endpoint is None or endpoint not in self._state.endpoints:
            self._send_error(ScriptedError(status=404, message=f"no route {self.path}"))
            return
        self._endpoint = endpoint
        try:
            body: Any = json.loads(raw)
        except ValueError:
            body = None
        headers = {name.lower(): value for name, value in self.headers.items()}
        purpose = headers.get(MODEL_PURPOSE_HEADER)
        side = purpose is not None
        index = self._state.record(self.command, self.path, headers, body, side=side)
        if not isinstance(body, dict):
            self._send_error(ScriptedError(status=400, message="body must be a JSON object"))
            self._state.finish(index, "error", side=side)
            return
        request = cast(dict[str, Any], body)
        reply = self._state.pick_side(purpose) if purpose is not None else self._state.pick(request)
        try:
            outcome = self._answer(index, request, reply)
        except _ClientGone as gone:
            outcome = gone.outcome
            self.close_connection = True
        except OSError:
            outcome = "aborted" if self._state.closing.is_set() else "disconnected"
            self.close_connection = True
        self._state.finish(index, outcome, side=side)

    def _note_info_request(self, path: str) -> None:
        with self._state.condition:
            self._state.info_requests.append((self.command, path))

    def _answer_route(self, path: str) -> None:
        self._note_info_request(path)
        self._send_json(200, self._state.routes[path])

    # -- answering -------------------------------------------------------------------------------

    def _answer(
        self, index: int, request: dict[str, Any], reply: ScriptedReply | ScriptedError
    ) -> Outcome:
        if isinstance(reply, ScriptedError):
            self._send_error(reply)
            return "error"
        if reply.error is not None:
            self._send_error(reply.error)
            return "error"
        frames = _RENDERERS[self._endpoint](index, request, reply)
        if not request.get("stream"):
            if reply.hang_after is not None:
                self._hang(reply.hang_timeout)
            if reply.delay:  # the time the deltas would have taken, before the one body
                self._pause(reply.delay * max(1, len(reply.text) + len(reply.reasoning)))
            self._send_json(200, frames.completion())
            return "completed"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        self._write_chunk(frames.role_frame())
        batch = bytearray()
        for number, frame in enumerate(frames.delta_frames()):
            if number == reply.hang_after:
                break
            if reply.delay:
                self._pause(reply.delay)
                self._write_chunk(frame)
                continue
            batch += frame
            if len(batch) >= _COALESCE_BYTES:
                self._write_chunk(bytes(batch))
                batch.clear()
        if reply.hang_after is None:
            batch += frames.closing_frames()
            self._write_chunk(bytes(batch))
            self.wfile.write(b"0\r\n\r\n")
            return "completed"
        # Hang after `hang_after` deltas, or after all of them (before `finish_reason`) if fewer.
        self._write_chunk(bytes(batch))
        self._hang(reply.hang_timeout)

    def _hang(self, timeout: float) -> NoReturn:
        self._pause(timeout)
        raise _ClientGone("timed_out")

    def _pause(self, seconds: float) -> None:
        """Wait `seconds`; raise `_ClientGone` early if the client leaves or the server closes."""
        deadline = time.monotonic() + seconds
        sock = self.connection
        while (remaining := deadline - time.monotonic()) > 0:
            if self._state.closing.is_set():
                raise _ClientGone("aborted")
            readable, _, _ = select.select([sock], [], [], min(remaining, _POLL_INTERVAL))
            if readable:
                try:
                    peeked = sock.recv(1, socket.MSG_PEEK)
                except OSError:
                    peeked = b""
                if not peeked:
                    # A socket shut by `close()` reads as the client leaving: say which it was.
                    raise _ClientGone("aborted" if self._state.closing.is_set() else "disconnected")
                # Unexpected bytes mid-reply (no pipelining in practice): ignore, keep waiting.
                self._state.closing.wait(_POLL_INTERVAL)

    def _write_chunk(self, data: bytes) -> None:
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))

    def _send_json(self, status: int, payload: object) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, error: ScriptedError) -> None:
        if self._endpoint == "messages" or "chat" not in self._state.endpoints:
            self._send_json(error.status, anthropic_error(error))
            return
        payload = {
            "error": {
                "message": error.message,
                "type": error.type,
                "param": None,
                "code": error.code,
            }
        }
        self._send_json(error.status, payload)


class FakeOpenAIServer:
    """A scripted OpenAI-compatible server on loopback (chat completions and Responses).

    Use as a context manager (or call `start()` / `close()`):

        with FakeOpenAIServer([ScriptedReply(text=["Hel", "lo"])]) as server:
            client = openai.OpenAI(base_url=server.base_url, api_key="test")

    The server runs in daemon threads of this process, so a subprocess (`accord serve`) can use it
    too. Every model request is recorded (`requests`); blocking `wait_for_requests`
    lets a test wait for the server to reach a point without sleeping.

    Args:
        script: The replies; see `Script`. An exhausted script answers 400 with a message saying so.
        models: Model ids listed by `GET /v1/models`.
        model_info: More fields of a model's `GET /v1/models` entry, by model id (e.g.
            ``{"local": {"max_model_len": 32768}}``, as vLLM reports its window).
        routes: Paths answered with fixed JSON, for GET and POST alike (e.g.
            ``{"/api/show": {"parameters": "num_ctx 8192"}}``).
        host: The interface to bind (loopback by default).
        port: The port; 0 picks a free one.
        side_scripts: Replies to side requests, by purpose (the value of
            :data:`~accord.agent.MODEL_PURPOSE_HEADER`, e.g. ``{"title": [ScriptedReply(...)]}``);
            consumed in order, apart from `script`.
    """

    def __init__(
        self,
        script: Script = (),
        *,
        models: Sequence[str] = ("fake-model",),
        model_info: Mapping[str, Mapping[str, Any]] | None = None,
        routes: Mapping[str, Any] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        side_scripts: Mapping[str, Sequence[ScriptedReply]] | None = None,
    ) -> None:
        self._state = _State(
            script=script,
            models=tuple(models),
            model_info=dict(model_info or {}),
            routes={path.rstrip("/"): answer for path, answer in (routes or {}).items()},
            side_scripts=dict(side_scripts or {}),
        )
        self._address = (host, port)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Bind and start serving in a daemon thread (idempotent).

        Raises:
            OSError: The address cannot be bound.
        """
        if self._httpd is not None:
            return
        self._httpd = _HTTPServer(self._address, self._state)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"FakeOpenAIServer:{self.port}",
            daemon=True,
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving: interrupt replies in progress, close all connections, join the threads."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._state.closing.set()
        httpd.shutdown()
        thread.join(_JOIN_TIMEOUT)
        with self._state.condition:
            connections = dict(self._state.connections)
        for sock in connections:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        for handler_thread in connections.values():
            handler_thread.join(_JOIN_TIMEOUT)
        httpd.server_close()

    def __enter__(self) -> Self:
        """Start the server."""
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Close the server."""
        self.close()

    @property
    def port(self) -> int:
        """The bound port.

        Raises:
            RuntimeError: The server has not been started.
        """
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not started")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """The URL to give the client as `base_url`, e.g. `http://127.0.0.1:41234/v1`."""
        return f"http://{self._address[0]}:{self.port}/v1"

    @property
    def requests(self) -> tuple[RecordedRequest, ...]:
        """Snapshots of the model requests received so far, in arrival order."""
        with self._state.condition:
            return tuple(self._state.records)

    @property
    def side_requests(self) -> tuple[RecordedRequest, ...]:
        """Snapshots of the side requests (marked with a purpose) received so far, in order."""
        with self._state.condition:
            return tuple(self._state.side_records)

    @property
    def info_requests(self) -> tuple[tuple[str, str], ...]:
        """``(method, path)`` of every request for `/v1/models` and the `routes`, in order."""
        with self._state.condition:
            return tuple(self._state.info_requests)

    @property
    def errors(self) -> tuple[BaseException, ...]:
        """Exceptions raised by reply functions (each was answered with a 400)."""
        with self._state.condition:
            return tuple(self._state.errors)

    def wait_for_requests(
        self, count: int, *, outcome: Outcome | None = None, timeout: float = 5.0
    ) -> tuple[RecordedRequest, ...]:
        """Block until `count` requests were received (with `outcome`, if given); return them all.

        This blocks the calling thread: from async code, run it with `anyio.to_thread.run_sync`.

        Raises:
            TimeoutError: Not reached within `timeout` seconds.
        """

        def reached() -> bool:
            matching = [r for r in self._state.records if outcome is None or r.outcome == outcome]
            return len(matching) >= count

        with self._state.condition:
            if not self._state.condition.wait_for(reached, timeout):
                states = [r.outcome for r in self._state.records]
                raise TimeoutError(
                    f"waited {timeout}s for {count} requests (outcome={outcome}); have {states}"
                )
            return tuple(self._state.records)
