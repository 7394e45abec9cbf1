"""The async JSON-RPC connection: a thin pump around the sans-IO ``Endpoint``.

``Connection`` reads messages from a transport, runs the peer's requests concurrently (bounded
by ``max_concurrent_requests``), hands notifications to one worker in the order they arrived
(bounded by ``max_buffered_notifications``, so a slow receiver slows the sender instead of
piling up memory), and correlates responses with the calls waiting for them. A response, and
a request from the peer, is handed over only after every notification received before it has
been handled, so a caller never sees a ``session/prompt`` result before the updates the agent
sent ahead of it. A request may also name an ``on_answer`` hook, run in notification order
when its answer arrives: after the notifications received before the answer, before any
received after it (where a client closes a prompt turn to further updates). The other way
round, a request handler may have work run right after its answer is written
(:func:`after_reply`): how an agent sends a new session's first updates only once the client
knows the session's id. A ``$/cancel_request`` from the peer cancels the handler of the
request it names (answered -32800), unless the handler said how it winds down instead
(:func:`on_cancel_request`): how an agent ends a prompt turn as ``session/cancel`` would.

All background work lives in one task group owned by ``async with Connection(...)``. Below it
sits a ``Transport``; above it the typed ACP roles (``accord.roles``).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import types
from collections.abc import Awaitable, Callable, Coroutine, Generator
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, NoReturn, Protocol, Self, cast

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from ..errors import (
    ConnectionClosed,
    InvalidRequest,
    RequestCancelled,
    TransportError,
)
from ..transports import BackgroundWriterTransport, BatchTransport, DirectReceiveTransport
from ._core import (
    Endpoint,
    InvalidMessage,
    NotificationReceived,
    RequestId,
    RequestReceived,
    ResponseReceived,
    describe_id,
    is_request_id,
)
from ._errors import exception_to_error

if TYPE_CHECKING:
    from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

    from ..transports import Transport

__all__ = (
    "CANCEL_REQUEST_METHOD",
    "AnswerHook",
    "Connection",
    "ConnectionStatistics",
    "NotificationHandler",
    "NotificationRoute",
    "RequestHandler",
    "WireObserver",
    "after_reply",
    "on_cancel_request",
    "set_wire_observer",
)

logger = logging.getLogger("accord.jsonrpc")

#: The protocol-level notification that cancels a request, in either direction.
CANCEL_REQUEST_METHOD = "$/cancel_request"

#: How many peer requests may run at once before the reader stops reading (backpressure).
DEFAULT_MAX_CONCURRENT_REQUESTS = 64
#: How many received notifications may wait for the worker before the reader stops reading.
#: Small enough to bound memory, large enough that a burst of updates keeps both sides busy.
DEFAULT_MAX_BUFFERED_NOTIFICATIONS = 256
#: Most messages taken from the transport in one call (see ``BatchTransport``).
READ_BATCH_MESSAGES = 64
#: The notification worker yields to other tasks at least once per this many notifications.
WORKER_YIELD_EVERY = 64
#: How long sending ``$/cancel_request`` for an abandoned call may take; it is a courtesy.
CANCEL_NOTICE_TIMEOUT = 1.0

RequestHandler = Callable[[str, Any], Awaitable[Any]]
"""Answers a peer request: ``(method, params) -> result``; raises ``RequestError`` to fail it."""

NotificationHandler = Callable[[str, Any], Awaitable[None]]
"""Handles a peer notification: ``(method, params)``; errors are logged, never answered."""

NotificationRoute = Callable[[Any], Awaitable[None]]
"""Handles a notification's parsed params (see ``Connection.add_notification_route``)."""

AnswerHook = Callable[[], None]
"""Runs in notification order when the answer to a request arrives (see ``Connection.request``)."""


class _AnswerMarker(str):
    """The type of the queue entry that runs an ``AnswerHook``: no wire method is this object."""

    __slots__ = ()


#: Queued in place of a notification's method: the entry's params is the hook to run.
_ANSWER = _AnswerMarker("(answer hook)")

_Notification = tuple[str, Any]  # (method, params), as queued for the notification worker

WireObserver = Callable[[Literal["sent", "received"], Any], None]
"""Sees every message crossing any connection in this process (used by test suites)."""

_wire_observer: WireObserver | None = None
_in_notification_worker: ContextVar[bool] = ContextVar(
    "accord_in_notification_worker", default=False
)
_reply_hooks: ContextVar[list[Callable[[], Awaitable[None]]] | None] = ContextVar(
    "accord_reply_hooks", default=None
)
_current_request: ContextVar[RequestId | None] = ContextVar("accord_current_request", default=None)
_cancel_hooks: ContextVar[list[Callable[[], None]] | None] = ContextVar(
    "accord_cancel_hooks", default=None
)


def current_request_id() -> RequestId | None:
    """The id of the peer's request whose handler is running (``None`` outside a handler).

    What a request the handler sends may name as its origin (ACP's request-scoped
    elicitation: ``elicitation/create`` with ``requestId``).
    """
    return _current_request.get()


def after_reply(callback: Callable[[], Awaitable[None]]) -> bool:
    """Run ``await callback()`` right after the answer to the request being handled is written.

    Call it from inside a request handler (or anything it awaits). The callbacks run in the
    order they were registered, in the handler's task, once its answer (result or error) has
    been handed to the transport, so whatever they send reaches the peer after the answer and
    before anything sent later by that task. They run even when the answer could not be sent
    (the connection is gone) and must cope with that; an exception from one is logged.

    Returns:
        ``False`` when not called inside a request handler of a :class:`Connection` (nothing
        is registered: the caller must do the work itself).
    """
    hooks = _reply_hooks.get()
    if hooks is None:
        return False
    hooks.append(callback)
    return True


def on_cancel_request(callback: Callable[[], None]) -> bool:
    """Have a ``$/cancel_request`` for the request being handled call ``callback()`` instead
    of cancelling its handler.

    Call it from inside a request handler (or anything it awaits). Once registered, the
    handler is no longer cancelled by the peer's notice: ``callback`` (synchronous, called
    from the reader for every notice naming the request) asks it to wind down, and the
    handler answers as it ends, a result or an error of its choosing (ACP lets it answer a
    cancelled request with a valid result). An exception from ``callback`` is logged. Closing
    the connection still cancels the handler.

    Returns:
        ``False`` when not called inside a request handler of a :class:`Connection` (nothing
        is registered).
    """
    hooks = _cancel_hooks.get()
    if hooks is None:
        return False
    hooks.append(callback)
    return True


def set_wire_observer(observer: WireObserver | None) -> WireObserver | None:
    """Install a process-wide observer of every message sent or received; returns the old one.

    Intended for test suites (validating traffic against the official schema) and debugging.
    """
    global _wire_observer
    previous, _wire_observer = _wire_observer, observer
    return previous


async def _method_not_found(method: str, params: Any) -> Any:
    from ..errors import MethodNotFound

    raise MethodNotFound(data={"method": method})


async def _ignore_notification(method: str, params: Any) -> None:
    logger.debug("notification %.100r ignored: no handler", method)


@dataclass(frozen=True, slots=True)
class ConnectionStatistics:
    """A snapshot of a connection's queues.

    Attributes:
        pending_requests: our requests awaiting the peer's answer.
        running_handlers: the peer's requests being handled now.
        buffered_notifications: notifications received but not yet handled.
        notifications_handled: notifications handled since the connection opened.
        closed: whether the peer has closed its side.
    """

    pending_requests: int
    running_handlers: int
    buffered_notifications: int
    notifications_handled: int
    closed: bool


class _Signal(Protocol):
    """A one-shot wake-up: awaited by one task, set once (an asyncio future's shape).

    On asyncio it is the loop's own future (made, awaited and set in C, with no task
    lookup); elsewhere an :class:`_EventSignal`. It is per request on both sides of a round
    trip, where anyio's ``Event`` cost several Python calls each to make, wait for and set.
    ``done()`` is also true once the task awaiting a future was cancelled, so a setter checks
    it first.
    """

    def done(self) -> bool: ...

    def set_result(self, result: None, /) -> None: ...

    def __await__(self) -> Generator[Any, None, Any]: ...


class _EventSignal:
    """A :class:`_Signal` over an anyio ``Event``: the one backends other than asyncio use."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = anyio.Event()

    def done(self) -> bool:
        """Whether it was set."""
        return self._event.is_set()

    def set_result(self, result: None, /) -> None:
        """Set it (``result`` is ignored: a signal carries nothing)."""
        self._event.set()

    def __await__(self) -> Generator[Any, None, Any]:
        return self._event.wait().__await__()


def _signal_factory() -> Callable[[], _Signal]:
    """How the running event loop's signals are made: its own futures on asyncio."""
    try:
        return asyncio.get_running_loop().create_future
    except RuntimeError:  # not asyncio (trio)
        return _EventSignal


class _Waiter:
    __slots__ = ("barrier", "error", "on_answer", "result", "settled", "signal")

    def __init__(self, on_answer: AnswerHook | None, signal: _Signal) -> None:
        self.signal = signal
        self.settled = False
        self.result: Any = None
        self.error: BaseException | None = None
        self.barrier = 0
        self.on_answer = on_answer

    def settle(self) -> None:
        """The answer (or the failure) is in place: wake the caller."""
        self.settled = True
        signal = self.signal
        if not signal.done():  # a future whose awaiting caller was cancelled is done
            signal.set_result(None)


_Job = tuple[RequestReceived, int, "anyio.CancelScope | None"]  # what _handle_request takes


class _ParkedWorker:
    """A request worker waiting for its next request (see ``Connection._request_worker``)."""

    __slots__ = ("job", "signal")

    def __init__(self, signal: _Signal) -> None:
        self.signal = signal
        self.job: _Job | None = None


@types.coroutine
def _run_in_context(
    context: contextvars.Context, coro: Coroutine[Any, Any, None]
) -> Generator[Any, Any, None]:
    """Await ``coro`` with every step of it run in ``context`` (as a task of its own would).

    What the event loop sends in, or throws in (a cancellation), goes to ``coro``; what it
    yields (the future it waits on) goes out to the loop, exactly as ``await coro`` would.
    """
    send: Any = None
    thrown: BaseException | None = None
    try:
        while True:
            try:
                if thrown is None:
                    yielded = context.run(coro.send, send)
                else:
                    yielded = context.run(coro.throw, thrown)
            except StopIteration:
                return
            send, thrown = None, None
            try:
                send = yield yielded
            except GeneratorExit:
                raise
            except BaseException as exc:  # a cancellation, handed to the coroutine
                thrown = exc
    finally:
        coro.close()


class Connection:
    """A JSON-RPC 2.0 connection over a message transport.

    Use it as an async context manager; leaving the block cancels running handlers and
    closes the transport::

        async with Connection(transport, on_request=answer) as conn:
            result = await conn.request("session/new", {"cwd": "/work", "mcpServers": []})

    Args:
        transport: where messages come from and go to.
        on_request: answers the peer's requests; default: ``-32601`` for everything.
        on_notification: handles the peer's notifications, one at a time, in order.
        max_concurrent_requests: peer requests running at once before reading pauses.
        max_buffered_notifications: notifications waiting for the worker before reading pauses.
        name: used in log messages.

    A notification handler may send requests, but should not wait for their answers while
    the peer keeps streaming notifications: once the notification buffer is full, reading
    pauses (that is the backpressure), and the answer waits behind it. Start such work in a
    task of your own instead.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        on_request: RequestHandler | None = None,
        on_notification: NotificationHandler | None = None,
        max_concurrent_requests: int = DEFAULT_MAX_CONCURRENT_REQUESTS,
        max_buffered_notifications: int = DEFAULT_MAX_BUFFERED_NOTIFICATIONS,
        name: str = "connection",
    ) -> None:
        self._transport = transport
        self._on_request = on_request or _method_not_found
        self._on_notification = on_notification or _ignore_notification
        self._notification_routes: dict[str, tuple[Callable[[Any], Any], NotificationRoute]] = {}
        self._endpoint = Endpoint()
        self._name = name
        self._waiters: dict[RequestId, _Waiter] = {}
        self._running: dict[RequestId, anyio.CancelScope] = {}
        #: What a ``$/cancel_request`` calls instead of cancelling a running handler.
        self._on_cancel: dict[RequestId, list[Callable[[], None]]] = {}
        self._no_running_handlers = anyio.Event()
        self._slots = anyio.Semaphore(max_concurrent_requests, fast_acquire=True)
        #: Request workers waiting for a request, the one that finished last at the end.
        self._idle_workers: list[_ParkedWorker] = []
        # Notifications travel to the worker in batches (all those of one read), so a burst
        # costs one hand-off per read, not per message; the bound still counts messages.
        # A batch in the worker's hands, batches queued, one batch being read: at most
        # ``max_buffered_notifications`` messages in all.
        self._batch_size = max(1, min(READ_BATCH_MESSAGES, max_buffered_notifications // 4))
        # A notification travels as a plain ``(method, params)`` pair.
        send, receive = anyio.create_memory_object_stream[list[_Notification]](
            max(1, max_buffered_notifications // self._batch_size - 2)
        )
        self._notify_send: MemoryObjectSendStream[list[_Notification]] = send
        self._notify_receive: MemoryObjectReceiveStream[list[_Notification]] = receive
        self._unsent: list[_Notification] = []
        self._receive_batch: Callable[[int], Awaitable[list[Any]]] | None = (
            transport.receive_batch if isinstance(transport, BatchTransport) else None
        )
        self._received_notifications = 0
        self._handled_notifications = 0
        self._barrier_waiters: list[tuple[int, anyio.Event]] = []
        self._close_reason: BaseException | None = None
        self._reader_done = anyio.Event()
        self._drained = anyio.Event()
        self._task_group: TaskGroup | None = None
        # Made per request: the running backend's own classes, looked up once (anyio's
        # generic constructors look the backend up on every call), set by __aenter__.
        self._new_signal: Callable[[], _Signal] = _EventSignal
        self._new_scope: Callable[[], anyio.CancelScope] = anyio.CancelScope

    # ----------------------------------------------------------------- lifecycle

    async def __aenter__(self) -> Self:
        self._new_signal = _signal_factory()
        self._new_scope = type(anyio.CancelScope())
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        task_group.start_soon(self._read_loop)
        task_group.start_soon(self._notification_worker)
        if isinstance(self._transport, BackgroundWriterTransport):
            task_group.start_soon(self._transport.run_writer)
        self._set_direct_receiver(self._take_now)
        return self

    def _set_direct_receiver(self, take: Callable[[Any], bool] | None) -> None:
        if isinstance(self._transport, DirectReceiveTransport):
            self._transport.set_direct_receiver(take)

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._task_group is not None
        self._task_group.cancel_scope.cancel()
        try:
            return await self._task_group.__aexit__(exc_type, exc, tb)
        except BaseExceptionGroup as group:
            # The task group wraps the body's own exception; callers should see it as is.
            if exc is not None and _only_this_exception(group, exc):
                _reraise_alone(exc)
            raise
        finally:
            self._fail_waiters(ConnectionClosed("the connection was closed"))
            for _, event in self._barrier_waiters:
                event.set()
            self._barrier_waiters = []
            # Closed locally: nothing is left running, so waiters of wait_closed() may go on.
            self._drained.set()
            self._set_direct_receiver(None)
            with anyio.CancelScope(shield=True):
                await self._transport.aclose()

    @property
    def closed(self) -> bool:
        """Whether the peer's side has ended (EOF or a transport failure)."""
        return self._reader_done.is_set()

    @property
    def close_reason(self) -> BaseException | None:
        """Why the connection ended, once it has."""
        return self._close_reason

    async def wait_peer_closed(self) -> None:
        """Wait until the peer has closed its side (EOF or a transport failure)."""
        await self._reader_done.wait()

    async def wait_closed(self) -> None:
        """Wait until the peer has closed its side and all work it started has finished.

        "Finished" means: every notification received was handled and every request
        received was answered (or found the connection gone).
        """
        await self._drained.wait()

    def statistics(self) -> ConnectionStatistics:
        """Return the sizes of this connection's queues."""
        return ConnectionStatistics(
            pending_requests=self._endpoint.pending_requests,
            running_handlers=len(self._running),
            buffered_notifications=self._received_notifications - self._handled_notifications,
            notifications_handled=self._handled_notifications,
            closed=self.closed,
        )

    def _start_soon(
        self, func: Callable[..., Coroutine[Any, Any, None]], *args: Any, name: str | None = None
    ) -> None:
        """Run ``func(*args)`` in a task of the connection's task group.

        The task lives as long as the connection: it is cancelled when the connection closes
        (the agent runtime's watch of a client; a live session opened on a connection that
        ``AgentRuntime.serve`` does not serve). An exception it raises ends the connection,
        so catch what you expect.

        Raises:
            RuntimeError: the connection is not running (outside ``async with``).
        """
        if self._task_group is None:
            raise RuntimeError("the connection is not running")
        self._task_group.start_soon(func, *args, name=name)

    def add_notification_route(
        self, method: str, parse: Callable[[Any], Any], handler: NotificationRoute
    ) -> None:
        """Deliver ``method`` as ``await handler(parse(params))``, bypassing ``on_notification``.

        The fast path of typed handlers: one call per notification instead of a chain. When
        ``parse`` raises, the notification goes to ``on_notification`` after all, which is
        where malformed params get reported.
        """
        self._notification_routes[method] = (parse, handler)

    # ----------------------------------------------------------------- outgoing

    async def request(
        self, method: str, params: Any = None, *, on_answer: AnswerHook | None = None
    ) -> Any:
        """Send a request and wait for its result.

        Cancelling the caller sends ``$/cancel_request`` to the peer.

        Args:
            method: the method name.
            params: its params (a JSON value).
            on_answer: called when the answer (result or error) arrives, in notification
                order: after the handlers of every notification received before the answer,
                before any received after it, and before this call returns. It is not called
                when the connection ends first or the call is cancelled; an exception it
                raises is logged.

        Raises:
            RequestError: the peer answered with an error (a subclass per code).
            ConnectionClosed: the connection ended before the answer came.
        """
        if self._close_reason is not None:
            raise self._closed_error()
        request_id, message = self._endpoint.build_request(method, params)
        waiter = _Waiter(on_answer, self._new_signal())
        self._waiters[request_id] = waiter
        try:
            await self._send(message)
            await waiter.signal
        except BaseException:
            if not waiter.settled:
                self._endpoint.forget(request_id)
                await self._send_cancel_notice(request_id)
            raise
        finally:
            del self._waiters[request_id]
        if waiter.barrier > self._handled_notifications and not _in_notification_worker.get():
            await self._wait_for_notifications(waiter.barrier)
        if waiter.error is not None:
            raise waiter.error
        return waiter.result

    async def notify(self, method: str, params: Any = None) -> None:
        """Send a notification.

        Raises:
            ConnectionClosed: the transport can no longer send.
        """
        # _send() inlined: this is the path of every streamed update.
        message = self._endpoint.build_notification(method, params)
        observer = _wire_observer
        if observer is not None:
            observer("sent", message)
        await self._transport.send(message)

    async def _send_cancel_notice(self, request_id: RequestId) -> None:
        if self._close_reason is not None:
            return
        with anyio.CancelScope(shield=True), anyio.move_on_after(CANCEL_NOTICE_TIMEOUT):
            try:
                await self.notify(CANCEL_REQUEST_METHOD, {"requestId": request_id})
            except TransportError:
                pass

    async def _send(self, message: dict[str, Any]) -> None:
        observer = _wire_observer
        if observer is not None:
            observer("sent", message)
        await self._transport.send(message)

    def _closed_error(self) -> ConnectionClosed:
        reason = self._close_reason
        if isinstance(reason, ConnectionClosed):
            return reason
        error = ConnectionClosed(f"the connection is closed: {reason}")
        error.__cause__ = reason
        return error

    # ----------------------------------------------------------------- incoming

    async def _read_loop(self) -> None:
        reason: BaseException = ConnectionClosed("the connection was closed")
        try:
            receive_batch = self._receive_batch
            while True:
                try:
                    if receive_batch is not None:
                        messages = await receive_batch(self._batch_size)
                    else:
                        messages = (await self._transport.receive(),)
                except anyio.EndOfStream:
                    reason = ConnectionClosed("the peer closed the connection")
                    break
                except TransportError as exc:
                    reason = exc
                    break
                except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
                    reason = ConnectionClosed(f"the transport broke: {exc!r}")
                    break
                notification_of = self._endpoint.notification_of
                observer = _wire_observer
                unsent = self._unsent
                for message in messages:
                    if observer is not None and isinstance(message, dict):
                        observer("received", message)
                    # The bulk of traffic, a notification, is queued here without a call
                    # into the dispatcher; everything else is dispatched in full.
                    notification = notification_of(message)
                    if notification is not None and notification[0] != CANCEL_REQUEST_METHOD:
                        self._received_notifications += 1
                        unsent.append(notification)
                        continue
                    await self._dispatch(message)
                    unsent = self._unsent  # a flush inside _dispatch swapped the list
                if self._unsent:
                    await self._flush_notifications()
        finally:
            self._close_reason = reason
            self._notify_send.close()
            self._reader_done.set()
            self._fail_waiters(self._closed_error())
        # Buffered notifications and running handlers still finish; then report drained.
        await self._wait_for_notifications(self._received_notifications)
        if self._running:
            await self._no_running_handlers.wait()
        self._drained.set()

    async def _dispatch(self, message: Any) -> None:
        event = self._endpoint.receive(message)
        if isinstance(event, NotificationReceived):
            if event.method == CANCEL_REQUEST_METHOD:
                self._cancel_running(event.params)
                return
            self._received_notifications += 1
            self._unsent.append((event.method, event.params))
        elif isinstance(event, ResponseReceived):
            self._settle(event)
        elif isinstance(event, RequestReceived):
            if self._unsent:  # its handler waits for them: hand them over before any wait
                await self._flush_notifications()
            await self._slots.acquire()
            self._start_handler(event)
        elif isinstance(event, InvalidMessage):
            if self._unsent:
                await self._flush_notifications()
            logger.warning(
                "%s: invalid message answered with an error: %s", self._name, event.reason
            )
            await self._send_quietly(event.reply)

    def _settle(self, event: ResponseReceived) -> None:
        """Hand an answer to the call waiting for it (if it still waits)."""
        waiter = self._waiters.get(event.id)
        if waiter is not None:
            waiter.result = event.result
            waiter.error = event.error
            if waiter.on_answer is not None:
                self._received_notifications += 1
                self._unsent.append((_ANSWER, waiter.on_answer))
            waiter.barrier = self._received_notifications
            waiter.settle()

    def _start_handler(self, event: RequestReceived) -> None:
        """Start the task answering a peer request; a slot of ``_slots`` is already held."""
        assert self._task_group is not None
        # Registered before the task starts, so a $/cancel_request read right after the
        # request (often in the same chunk) finds it; None marks a duplicate id.
        scope = None if event.id in self._running else self._new_scope()
        if scope is not None:
            self._running[event.id] = scope
        job = (event, self._received_notifications, scope)
        idle = self._idle_workers
        while idle:  # a worker that answered an earlier request takes it: no task to start
            parked = idle.pop()
            if not parked.signal.done():  # done: its wait was cancelled (the connection ends)
                parked.job = job
                parked.signal.set_result(None)
                return
        self._task_group.start_soon(self._request_worker, job)

    async def _request_worker(self, job: _Job) -> None:
        """Answer peer requests, one at a time, for as long as the connection runs.

        Starting a task per request costs more than many a handler does; a worker that is
        done waits for the next request instead, so a steady stream of requests starts no
        tasks at all. There are at most as many workers as requests ever ran at once (so
        at most ``max_concurrent_requests``). Each handler runs in a fresh copy of the
        worker's starting context, as in a task of its own: context variables it sets are
        not seen by the next request.
        """
        base = contextvars.copy_context()
        idle = self._idle_workers
        new_signal = self._new_signal
        while True:
            await _run_in_context(base.copy(), self._handle_request(*job))
            parked = _ParkedWorker(new_signal())
            idle.append(parked)
            await parked.signal
            assert parked.job is not None
            job = parked.job

    def _take_now(self, message: Any) -> bool:
        """Handle an answer or a request as the transport reads it, without the reader task.

        Called by a ``DirectReceiveTransport`` from the event loop's read callback, only for
        a message ``receive`` would have returned next while the read loop waits in it: so it
        is handled exactly as the read loop would, in the same order, one turn of the event
        loop sooner. Only what needs no waiting is taken here: the answer to a call that has
        no ``on_answer`` hook, and a well-formed request while a handler slot is free (its
        handler starts in a task of its own). Anything else, or anything while notifications
        are still being handed over or the connection is ending, is left to the read loop.
        """
        if (
            type(message) is not dict
            or self._unsent
            or self._close_reason is not None
            or self._task_group is None
            or self._task_group.cancel_scope.cancel_called
        ):
            return False
        fields = cast(dict[str, Any], message)
        request_id: Any = fields.get("id")
        if not is_request_id(request_id) or fields.get("jsonrpc") != "2.0":
            return False
        if "method" in fields:
            # A request the endpoint classifies as one (checked here, so that it cannot turn
            # out to be something that needs an answer sent from here).
            params: Any = fields.get("params")
            if type(fields["method"]) is not str or not (
                params is None or type(params) is dict or type(params) is list
            ):
                return False
            try:
                self._slots.acquire_nowait()
            except anyio.WouldBlock:
                return False  # the read loop waits for a slot (backpressure)
            self._observe_received(fields)
            event = self._endpoint.receive(fields)
            assert isinstance(event, RequestReceived)
            try:
                self._start_handler(event)
            except BaseException:
                self._running.pop(event.id, None)
                self._slots.release()
                raise
            return True
        if ("result" not in fields and "error" not in fields) or request_id not in self._waiters:
            return False
        waiter = self._waiters[request_id]
        if waiter.on_answer is not None:
            return False  # its hook goes through the notification worker: the read loop's job
        self._observe_received(fields)
        event = self._endpoint.receive(fields)
        if isinstance(event, ResponseReceived):
            self._settle(event)
        return True  # otherwise the late answer to an abandoned call, which is dropped

    @staticmethod
    def _observe_received(message: dict[str, Any]) -> None:
        observer = _wire_observer
        if observer is not None:
            observer("received", message)

    async def _flush_notifications(self) -> None:
        batch, self._unsent = self._unsent, []
        try:
            try:
                self._notify_send.send_nowait(batch)
            except anyio.WouldBlock:
                await self._notify_send.send(batch)
        except anyio.BrokenResourceError:
            # The worker is gone, so the connection is closing; the reader may not have
            # passed a checkpoint since (buffered input is read without one): take it now.
            await anyio.lowlevel.checkpoint()
            raise

    def _cancel_running(self, params: Any) -> None:
        request_id: Any = (
            cast(dict[str, Any], params).get("requestId") if isinstance(params, dict) else None
        )
        if not is_request_id(request_id):
            # Not an id at all (an array or an object would not even hash; true and 1.0 would
            # name the request 1): nothing of ours can be meant, so the notice is dropped.
            logger.debug(
                "%s: $/cancel_request with invalid id %s", self._name, describe_id(request_id)
            )
            return
        scope = self._running.get(request_id)
        hooks = self._on_cancel.get(request_id)
        if scope is not None and hooks:
            for hook in hooks:
                try:
                    hook()
                except Exception:
                    logger.exception(
                        "%s: cancel hook for %s failed", self._name, describe_id(request_id)
                    )
        elif scope is not None:
            scope.cancel()
        else:
            logger.debug(
                "%s: $/cancel_request for %s: not running", self._name, describe_id(request_id)
            )

    async def _handle_request(
        self, event: RequestReceived, barrier: int, scope: anyio.CancelScope | None
    ) -> None:
        try:
            if scope is None:
                reason = (
                    f"request id {describe_id(event.id)} is already in use by a running "
                    "request: this one is refused, that one goes on"
                )
                error = InvalidRequest(data=reason)  # shaped like every other -32600 reply
                await self._send_quietly(self._endpoint.build_error(None, error))
                return
            reply: dict[str, Any] | None = None
            hooks: list[Callable[[], Awaitable[None]]] = []
            _reply_hooks.set(hooks)
            _current_request.set(event.id)
            cancel_hooks: list[Callable[[], None]] = []
            _cancel_hooks.set(cancel_hooks)
            self._on_cancel[event.id] = cancel_hooks
            try:
                with scope:
                    if barrier > self._handled_notifications:
                        await self._wait_for_notifications(barrier)
                    try:
                        result = await self._on_request(event.method, event.params)
                    except Exception as exc:
                        error = exception_to_error(exc, event.method)
                        reply = self._endpoint.build_error(event.id, error)
                    else:
                        reply = self._endpoint.build_result(event.id, result)
            finally:
                del self._running[event.id]
                del self._on_cancel[event.id]
                if not self._running and self._reader_done.is_set():
                    self._no_running_handlers.set()
            if scope.cancelled_caught:
                reply = self._endpoint.build_error(event.id, RequestCancelled())
            if reply is not None:
                try:
                    await self._send_quietly(reply)
                except TypeError as exc:  # orjson's JSONEncodeError: the answer is not JSON
                    error = exception_to_error(exc, event.method)
                    await self._send_quietly(self._endpoint.build_error(event.id, error))
            for hook in hooks:
                try:
                    await hook()
                except Exception:
                    logger.exception(
                        "%s: after-reply work for %.100r failed", self._name, event.method
                    )
        finally:
            self._slots.release()

    async def _send_quietly(self, message: dict[str, Any]) -> None:
        try:
            await self._send(message)
        except (TransportError, anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            logger.info(
                "%s: could not send %s: %s", self._name, describe_id(message.get("id")), exc
            )

    async def _notification_worker(self) -> None:
        _in_notification_worker.set(True)
        receive = self._notify_receive
        async with receive:
            while True:
                # Drain what is buffered without a scheduling round trip per message, but
                # yield now and then so a burst cannot starve the other tasks.
                try:
                    batch = receive.receive_nowait()
                except anyio.WouldBlock:
                    try:
                        batch = await receive.receive()
                    except anyio.EndOfStream:
                        return
                except anyio.EndOfStream:
                    return
                on_notification = self._on_notification
                routes = self._notification_routes
                for method, params in batch:
                    try:
                        route = routes.get(method)
                        if route is None:
                            if method is _ANSWER:
                                params()
                            else:
                                await on_notification(method, params)
                        else:
                            try:
                                value = route[0]({} if params is None else params)
                            except Exception:
                                # Params that do not parse: the general handler reports them.
                                await on_notification(method, params)
                            else:
                                await route[1](value)
                    except Exception:
                        logger.exception(
                            "%s: handler for notification %.100r failed", self._name, method
                        )
                    self._handled_notifications += 1
                    if self._barrier_waiters:
                        self._wake_barrier_waiters()
                    if not self._handled_notifications % WORKER_YIELD_EVERY:
                        await anyio.lowlevel.checkpoint()

    def _wake_barrier_waiters(self) -> None:
        done = self._handled_notifications
        still: list[tuple[int, anyio.Event]] = []
        for barrier, event in self._barrier_waiters:
            if barrier <= done:
                event.set()
            else:
                still.append((barrier, event))
        self._barrier_waiters = still

    async def _wait_for_notifications(self, barrier: int) -> None:
        if barrier <= self._handled_notifications:
            return
        event = anyio.Event()
        self._barrier_waiters.append((barrier, event))
        await event.wait()

    def _fail_waiters(self, error: BaseException) -> None:
        for waiter in self._waiters.values():
            if not waiter.settled:
                waiter.error = error
                waiter.settle()
        for request_id in self._endpoint.pending_ids():
            self._endpoint.forget(request_id)


def _only_this_exception(group: BaseExceptionGroup[BaseException], exc: BaseException) -> bool:
    """Whether ``group`` holds nothing but ``exc`` (and cancellations caused by it)."""
    cancelled = anyio.get_cancelled_exc_class()
    for leaf in group.exceptions:
        if isinstance(leaf, BaseExceptionGroup):
            nested = cast("BaseExceptionGroup[BaseException]", leaf)
            if not _only_this_exception(nested, exc):
                return False
        elif leaf is not exc and not isinstance(leaf, cancelled):
            return False
    return True


def _reraise_alone(exc: BaseException) -> NoReturn:
    """Raise ``exc`` out of a task group's wrapping, keeping its own cause and context."""
    cause, context, suppress = exc.__cause__, exc.__context__, exc.__suppress_context__
    try:
        raise exc
    finally:
        exc.__cause__, exc.__context__ = cause, context
        exc.__suppress_context__ = suppress
