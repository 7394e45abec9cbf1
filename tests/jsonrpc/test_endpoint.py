"""The sans-IO endpoint: classification of every message shape, ids, pending requests, errors.

No event loop anywhere in this file: ``Endpoint`` must never await.
"""

from __future__ import annotations

import logging
from typing import Any

import pydantic
import pytest

from accord.errors import (
    AuthRequired,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    RequestCancelled,
    RequestError,
    ResourceNotFound,
)
from accord.jsonrpc import (
    Endpoint,
    InvalidMessage,
    NotificationReceived,
    RequestReceived,
    ResponseReceived,
    StrayResponse,
    exception_to_error,
)
from accord.transports import MalformedFrame, decode_line, encode_message


def invalid(event: Any, code: int, reply_id: Any) -> InvalidMessage:
    """Assert ``event`` is an error answer with ``code`` for ``reply_id``, shaped per the spec."""
    assert isinstance(event, InvalidMessage), f"expected InvalidMessage, got {event!r}"
    reply = event.reply
    assert set(reply) == {"jsonrpc", "id", "error"}
    assert reply["jsonrpc"] == "2.0"
    assert reply["id"] == reply_id
    assert type(reply["id"]) is type(reply_id), "the id is echoed with its type (0 is not False)"
    assert reply["error"]["code"] == code
    assert reply["error"]["message"] == ("Parse error" if code == -32700 else "Invalid request")
    assert isinstance(reply["error"]["data"], str)
    assert reply["error"]["data"] == event.reason
    assert decode_line(encode_message(reply)[:-1]) == reply, "the reply is sendable JSON"
    return event


# ----------------------------------------------------------------- requests and notifications


@pytest.mark.parametrize("request_id", [0, 1, -7, 2**53 + 1, "", "0", "abc", "\u00e9"], ids=repr)
def test_request_ids_ints_and_strings(request_id: int | str) -> None:
    event = Endpoint().receive({"jsonrpc": "2.0", "id": request_id, "method": "m"})
    assert event == RequestReceived(request_id, "m", None)
    assert type(event.id) is type(request_id)


def test_request_with_null_id_is_a_request() -> None:
    # The spec allows (and discourages) null ids; the answer goes back with id null.
    event = Endpoint().receive({"jsonrpc": "2.0", "id": None, "method": "m", "params": {}})
    assert event == RequestReceived(None, "m", {})


@pytest.mark.parametrize(
    "params",
    [{"a": 1}, {}, [1, "two"], [], None],
    ids=["object", "empty-object", "array", "[]", "null"],
)
def test_request_params_object_array_or_absent(params: Any) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 1, "method": "m", "params": params}
    assert Endpoint().receive(message) == RequestReceived(1, "m", params)


def test_request_without_params() -> None:
    assert Endpoint().receive({"jsonrpc": "2.0", "id": 1, "method": "m"}) == RequestReceived(
        1, "m", None
    )


def test_notification() -> None:
    event = Endpoint().receive({"jsonrpc": "2.0", "method": "session/update", "params": {"x": 1}})
    assert event == NotificationReceived("session/update", {"x": 1})


@pytest.mark.parametrize("method", ["_vendor/thing", "unknown/method", "", "$/cancel_request"])
def test_endpoint_does_not_judge_method_names(method: str) -> None:
    # Routing (and -32601) is the connection's job; the core only classifies.
    endpoint = Endpoint()
    assert endpoint.receive({"jsonrpc": "2.0", "id": 3, "method": method}) == RequestReceived(
        3, method, None
    )
    assert endpoint.receive({"jsonrpc": "2.0", "method": method}) == NotificationReceived(
        method, None
    )


def test_extra_members_are_tolerated() -> None:
    event = Endpoint().receive({"jsonrpc": "2.0", "id": 1, "method": "m", "_meta": {"x": 1}})
    assert event == RequestReceived(1, "m", None)


# ----------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "message",
    [[{"jsonrpc": "2.0", "id": 1, "method": "m"}], [], "text", 42, 1.5, None, True, False],
    ids=["batch", "empty-batch", "string", "int", "float", "null", "true", "false"],
)
def test_not_an_object_is_invalid_request(message: Any) -> None:
    event = invalid(Endpoint().receive(message), -32600, None)
    assert "expected a JSON object" in event.reason
    if isinstance(message, list):
        assert "batch" in event.reason


@pytest.mark.parametrize(
    ("message", "reply_id"),
    [
        ({"id": 1, "method": "m"}, 1),
        ({"jsonrpc": "1.0", "id": 2, "method": "m"}, 2),
        ({"jsonrpc": 2.0, "id": "s", "method": "m"}, "s"),
        ({"jsonrpc": None, "id": 0, "method": "m"}, 0),
        ({"jsonrpc": "2.0 ", "method": "m"}, None),
        ({"method": "m"}, None),
        ({"jsonrpc": "1.0", "id": True, "method": "m"}, None),
        ({"jsonrpc": "1.0", "id": [1], "method": "m"}, None),
        ({"id": 5, "result": {}}, None),
        ({"jsonrpc": "1.0", "id": 5, "error": {"code": 1, "message": "m"}}, None),
        ({"id": 5}, None),
        ({"id": [1], "result": {}}, None),
        ({"jsonrpc": "1.0", "id": {"n": 1}, "error": {"code": 1, "message": "m"}}, None),
    ],
    ids=[
        "missing",
        "1.0",
        "number",
        "null",
        "padded",
        "missing-no-id",
        "missing-bool-id",
        "missing-array-id",
        "response-id-not-echoed",
        "error-response-id-not-echoed",
        "id-only-not-echoed",
        "response-unhashable-id",
        "error-response-unhashable-id",
    ],
)
def test_missing_or_wrong_jsonrpc_member(message: dict[str, Any], reply_id: Any) -> None:
    event = invalid(Endpoint().receive(message), -32600, reply_id)
    assert '"jsonrpc": "2.0"' in event.reason


@pytest.mark.parametrize(
    "bad_id",
    [True, False, 1.5, 1.0, 0.0, -2.5, {"n": 1}, [1], [], 1e300],
    ids=["true", "false", "1.5", "1.0", "0.0", "-2.5", "object", "array", "[]", "1e300"],
)
@pytest.mark.parametrize("kind", ["request", "result", "error"])
def test_bad_id_type_is_invalid_request(bad_id: Any, kind: str) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": bad_id}
    if kind == "request":
        message["method"] = "m"
    elif kind == "result":
        message["result"] = {}
    else:
        message["error"] = {"code": -1, "message": "x"}
    endpoint = Endpoint()
    endpoint.build_request("pending")  # id 0: 0.0 or False must not settle it
    event = invalid(endpoint.receive(message), -32600, None)
    assert "invalid id" in event.reason
    assert endpoint.pending_requests == 1


def test_huge_integer_id_parsed_as_float_is_rejected() -> None:
    # orjson turns integers beyond 64 bits into floats; they are not valid ids.
    message = decode_line(b'{"jsonrpc": "2.0", "id": 18446744073709551616, "method": "m"}')
    invalid(Endpoint().receive(message), -32600, None)


@pytest.mark.parametrize("params", ["text", 3, 0, True, False, 1.5], ids=repr)
def test_params_not_object_or_array(params: Any) -> None:
    endpoint = Endpoint()
    request = {"jsonrpc": "2.0", "id": 9, "method": "m", "params": params}
    event = invalid(endpoint.receive(request), -32600, 9)
    assert "params must be an object or an array" in event.reason
    notification = {"jsonrpc": "2.0", "method": "m", "params": params}
    invalid(endpoint.receive(notification), -32600, None)


@pytest.mark.parametrize("method", [None, 1, ["m"], {"m": 1}, True], ids=repr)
def test_method_not_a_string(method: Any) -> None:
    endpoint = Endpoint()
    event = invalid(endpoint.receive({"jsonrpc": "2.0", "id": "r", "method": method}), -32600, "r")
    assert "method must be a string" in event.reason
    invalid(endpoint.receive({"jsonrpc": "2.0", "method": method}), -32600, None)


@pytest.mark.parametrize(
    ("message", "reply_id"),
    [
        ({"jsonrpc": "2.0"}, None),
        ({"jsonrpc": "2.0", "id": 4}, None),
        ({"jsonrpc": "2.0", "id": "x", "params": {}}, None),
        ({"jsonrpc": "2.0", "result": {}}, None),
        ({"jsonrpc": "2.0", "error": {"code": 1, "message": "m"}}, None),
    ],
    ids=["empty", "id-only", "id-and-params", "result-without-id", "error-without-id"],
)
def test_neither_request_notification_nor_response(message: dict[str, Any], reply_id: Any) -> None:
    event = invalid(Endpoint().receive(message), -32600, reply_id)
    assert "neither a request, a notification nor a response" in event.reason


@pytest.mark.parametrize(
    "message",
    [
        {"id": 0, "result": {"ok": True}},
        {"jsonrpc": "1.0", "id": 0, "error": {"code": -32603, "message": "m"}},
    ],
    ids=["result", "error"],
)
def test_response_without_jsonrpc_settles_the_caller_and_is_not_echoed(
    message: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    # Echoing id 0 back would look to the peer like an answer to *its* request 0.
    endpoint = Endpoint()
    endpoint.build_request("m")
    with caplog.at_level(logging.WARNING, logger="accord.jsonrpc"):
        event = endpoint.receive(message)
    assert isinstance(event, ResponseReceived)
    assert event.id == 0
    assert isinstance(event.error, InvalidRequest)
    assert '"jsonrpc": "2.0"' in event.error.message
    assert endpoint.pending_requests == 0
    assert "malformed response to request 0" in caplog.text


def test_neither_kind_never_echoes_an_id_that_names_our_request() -> None:
    endpoint = Endpoint()
    endpoint.build_request("m")
    invalid(endpoint.receive({"jsonrpc": "2.0", "id": 0}), -32600, None)
    assert endpoint.pending_requests == 1


def test_malformed_frame_parse_error_answered_with_null_id() -> None:
    frame = decode_line(b"{oops")
    assert isinstance(frame, MalformedFrame)
    event = invalid(Endpoint().receive(frame), -32700, None)
    assert event.reason.startswith("invalid JSON")


def test_non_utf8_frame_is_read_lossily() -> None:
    frame = decode_line(b'{"jsonrpc": "2.0", "method": "\xff"}')
    assert Endpoint().receive(frame) == NotificationReceived("\ufffd", None)


def test_a_request_that_is_not_json_is_answered_by_the_id_at_its_start() -> None:
    frame = decode_line(b'{"jsonrpc": "2.0", "id": 4, "method": "m", "params": [1,,]}')
    invalid(Endpoint().receive(frame), -32700, 4)


def test_oversized_frame_answered_with_invalid_request() -> None:
    frame = MalformedFrame(-32600, "message of 11 bytes exceeds the limit of 10 bytes")
    event = invalid(Endpoint().receive(frame), -32600, None)
    assert "exceeds the limit" in event.reason


def test_bad_input_leaves_the_endpoint_usable() -> None:
    endpoint = Endpoint()
    request_id, _ = endpoint.build_request("m")
    for garbage in ([], "x", {"id": 1}, MalformedFrame(-32700, "bad"), {"jsonrpc": "2.0"}):
        assert isinstance(endpoint.receive(garbage), InvalidMessage)
    assert endpoint.pending_requests == 1
    event = endpoint.receive({"jsonrpc": "2.0", "id": request_id, "result": "ok"})
    assert event == ResponseReceived(request_id, "ok", None)


# ----------------------------------------------------------------- outgoing requests


def test_ids_start_at_zero_and_increase() -> None:
    endpoint = Endpoint()
    ids = [endpoint.build_request("m")[0] for _ in range(5)]
    assert ids == [0, 1, 2, 3, 4]
    assert endpoint.pending_requests == 5
    assert sorted(endpoint.pending_ids(), key=str) == ids


def test_build_request_shape() -> None:
    endpoint = Endpoint()
    assert endpoint.build_request("a") == (0, {"jsonrpc": "2.0", "id": 0, "method": "a"})
    assert endpoint.build_request("b", {"x": 1}) == (
        1,
        {"jsonrpc": "2.0", "id": 1, "method": "b", "params": {"x": 1}},
    )
    assert endpoint.build_request("c", []) == (
        2,
        {"jsonrpc": "2.0", "id": 2, "method": "c", "params": []},
    )


def test_build_notification_result_and_error() -> None:
    assert Endpoint.build_notification("n") == {"jsonrpc": "2.0", "method": "n"}
    assert Endpoint.build_notification("n", {"a": 1}) == {
        "jsonrpc": "2.0",
        "method": "n",
        "params": {"a": 1},
    }
    assert Endpoint.build_result(0, None) == {"jsonrpc": "2.0", "id": 0, "result": {}}
    assert Endpoint.build_result("s", [1]) == {"jsonrpc": "2.0", "id": "s", "result": [1]}
    assert Endpoint.build_result(1, 0) == {"jsonrpc": "2.0", "id": 1, "result": 0}
    assert Endpoint.build_error(7, InvalidParams("bad", {"field": "x"})) == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32602, "message": "bad", "data": {"field": "x"}},
    }
    assert Endpoint.build_error(None, InternalError()) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32603, "message": "Internal error"},
    }


# ----------------------------------------------------------------- responses


def test_result_for_id_zero_settles_it() -> None:
    endpoint = Endpoint()
    request_id, _ = endpoint.build_request("m")
    assert request_id == 0
    event = endpoint.receive({"jsonrpc": "2.0", "id": 0, "result": {"ok": True}})
    assert event == ResponseReceived(0, {"ok": True}, None)
    assert endpoint.pending_requests == 0


def test_responses_correlate_out_of_order() -> None:
    endpoint = Endpoint()
    ids = [endpoint.build_request("m")[0] for _ in range(3)]
    for request_id in reversed(ids):
        event = endpoint.receive({"jsonrpc": "2.0", "id": request_id, "result": request_id * 10})
        assert event == ResponseReceived(request_id, request_id * 10, None)
    assert endpoint.pending_requests == 0


@pytest.mark.parametrize("result", [None, 0, False, "", [], {}], ids=repr)
def test_falsy_results_are_results(result: Any) -> None:
    endpoint = Endpoint()
    endpoint.build_request("m")
    assert endpoint.receive({"jsonrpc": "2.0", "id": 0, "result": result}) == ResponseReceived(
        0, result, None
    )


@pytest.mark.parametrize(
    ("code", "cls"),
    [
        (-32700, RequestError),
        (-32600, InvalidRequest),
        (-32601, MethodNotFound),
        (-32602, InvalidParams),
        (-32603, InternalError),
        (-32800, RequestCancelled),
        (-32000, AuthRequired),
        (-32002, ResourceNotFound),
        (-1, RequestError),
        (42, RequestError),
    ],
)
def test_error_response_becomes_request_error_subclass(code: int, cls: type[RequestError]) -> None:
    endpoint = Endpoint()
    endpoint.build_request("m")
    error = {"code": code, "message": "why", "data": {"detail": [1, 2]}}
    event = endpoint.receive({"jsonrpc": "2.0", "id": 0, "error": error})
    assert isinstance(event, ResponseReceived)
    assert event.result is None
    assert isinstance(event.error, cls)
    assert (event.error.code, event.error.message, event.error.data) == (
        code,
        "why",
        {"detail": [1, 2]},
    )
    assert endpoint.pending_requests == 0


@pytest.mark.parametrize(
    ("error", "code", "message"),
    [
        ({}, -32603, "(no message)"),
        ({"code": "x", "message": 5}, -32603, "(no message)"),
        ({"code": True, "message": "m"}, -32603, "m"),
        ({"code": 1.5, "message": "m"}, -32603, "m"),
        ({"message": "only message"}, -32603, "only message"),
    ],
    ids=["empty", "wrong-types", "bool-code", "float-code", "no-code"],
)
def test_error_object_with_bad_members_still_settles(
    error: dict[str, Any], code: int, message: str
) -> None:
    endpoint = Endpoint()
    endpoint.build_request("m")
    event = endpoint.receive({"jsonrpc": "2.0", "id": 0, "error": error})
    assert isinstance(event, ResponseReceived)
    assert isinstance(event.error, RequestError)
    assert (event.error.code, event.error.message) == (code, message)


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 0, "error": "failed"},
        {"jsonrpc": "2.0", "id": 0, "error": None},
        {"jsonrpc": "2.0", "id": 0, "error": [-32603, "x"]},
        {"jsonrpc": "2.0", "id": 0, "error": -32603},
        {"jsonrpc": "2.0", "id": 0, "result": {}, "error": {"code": 1, "message": "m"}},
    ],
    ids=["string", "null", "array", "number", "result-and-error"],
)
def test_malformed_error_response_settles_with_invalid_request(message: dict[str, Any]) -> None:
    # The caller must not hang: it gets an error that says what was wrong with the answer.
    endpoint = Endpoint()
    endpoint.build_request("m")
    event = endpoint.receive(message)
    assert isinstance(event, ResponseReceived)
    assert isinstance(event.error, InvalidRequest)
    assert "malformed error response" in event.error.message
    assert endpoint.pending_requests == 0


@pytest.mark.parametrize("stray_id", [99, "0", None, -1], ids=repr)
def test_response_for_unknown_id_is_stray_and_logged(
    stray_id: Any, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint = Endpoint()
    endpoint.build_request("m")
    with caplog.at_level(logging.WARNING, logger="accord.jsonrpc"):
        message = {"jsonrpc": "2.0", "id": stray_id, "result": 1}
        event = endpoint.receive(message)
    assert event == StrayResponse(message)
    assert endpoint.pending_requests == 1, "a string '0' does not settle integer id 0"
    assert "response for unknown request id" in caplog.text


def test_second_answer_to_the_same_id_is_stray() -> None:
    endpoint = Endpoint()
    endpoint.build_request("m")
    assert isinstance(endpoint.receive({"jsonrpc": "2.0", "id": 0, "result": 1}), ResponseReceived)
    assert isinstance(endpoint.receive({"jsonrpc": "2.0", "id": 0, "result": 2}), StrayResponse)


def test_late_answer_to_a_forgotten_request_is_expected(caplog: pytest.LogCaptureFixture) -> None:
    endpoint = Endpoint()
    request_id, _ = endpoint.build_request("m")
    endpoint.forget(request_id)
    assert endpoint.pending_requests == 0
    with caplog.at_level(logging.DEBUG, logger="accord.jsonrpc"):
        event = endpoint.receive(
            {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32800, "message": "c"}}
        )
    assert isinstance(event, StrayResponse)
    assert "late answer to abandoned request" in caplog.text
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_forget_unknown_id_is_a_no_op() -> None:
    endpoint = Endpoint()
    endpoint.build_request("m")
    endpoint.forget(12345)
    assert endpoint.pending_requests == 1


def test_abandoned_memory_is_bounded() -> None:
    endpoint = Endpoint()
    total = Endpoint.ABANDONED_MEMORY + 10
    for _ in range(total):
        request_id, _ = endpoint.build_request("m")
        endpoint.forget(request_id)
    assert len(endpoint._abandoned) == Endpoint.ABANDONED_MEMORY
    assert 0 not in endpoint._abandoned
    assert total - 1 in endpoint._abandoned


def test_message_with_method_and_result_is_a_request() -> None:
    # "method" decides: a message that names a method is a call, whatever else it carries.
    event = Endpoint().receive({"jsonrpc": "2.0", "id": 1, "method": "m", "result": 1})
    assert event == RequestReceived(1, "m", None)


# ----------------------------------------------------------------- the exception boundary


class Params(pydantic.BaseModel):
    cwd: str
    count: int


def test_request_error_passes_through_unchanged() -> None:
    error = ResourceNotFound("no such session", {"sessionId": "s1"})
    assert exception_to_error(error, "session/load") is error
    custom = RequestError("custom", [1], code=-32099)
    assert exception_to_error(custom, "m").to_error_object() == {
        "code": -32099,
        "message": "custom",
        "data": [1],
    }


def test_validation_error_becomes_invalid_params_naming_fields() -> None:
    with pytest.raises(pydantic.ValidationError) as info:
        Params.model_validate({"count": "many"})
    error = exception_to_error(info.value, "session/new")
    assert isinstance(error, InvalidParams)
    assert error.code == -32602
    assert "session/new" in error.message
    assert "cwd" in error.message
    assert "count" in error.message
    problems = error.data["errors"]
    assert {p["field"] for p in problems} == {"cwd", "count"}
    assert all(isinstance(p["problem"], str) and p["problem"] for p in problems)
    assert "many" not in repr(error.data), "the input itself is not echoed back"


def test_nested_validation_error_names_the_path() -> None:
    class Outer(pydantic.BaseModel):
        inner: list[Params]

    with pytest.raises(pydantic.ValidationError) as info:
        Outer.model_validate({"inner": [{"cwd": "/", "count": 1}, {"cwd": 3, "count": 1}]})
    error = exception_to_error(info.value, "m")
    assert [p["field"] for p in error.data["errors"]] == ["inner.1.cwd"]


def test_crash_becomes_internal_error_without_traceback(caplog: pytest.LogCaptureFixture) -> None:
    def crash() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom") as info:
        crash()
    with caplog.at_level(logging.ERROR, logger="accord.jsonrpc"):
        error = exception_to_error(info.value, "fs/read")
    assert isinstance(error, InternalError)
    wire = encode_message(Endpoint.build_error(1, error)).decode()
    assert error.to_error_object() == {
        "code": -32603,
        "message": "Internal error",
        "data": {"error": "ValueError: boom"},
    }
    assert "Traceback" not in wire
    assert "test_endpoint.py" not in wire
    (record,) = caplog.records
    assert record.exc_info is not None
    assert "fs/read" in record.getMessage()
    assert "Traceback" in caplog.text
    assert "crash" in caplog.text


def test_crash_message_is_bounded() -> None:
    error = exception_to_error(RuntimeError("x" * 10_000), "m")
    assert len(error.data["error"]) <= 1000


def test_oversized_request_is_answered_by_its_own_id() -> None:
    from accord.transports import LineDecoder

    decoder = LineDecoder(100)
    line = b'{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":"' + b"x" * 200 + b'"}\n'
    (frame,) = decoder.feed(line)
    event = Endpoint().receive(frame)
    assert isinstance(event, InvalidMessage)
    assert event.reply["id"] == 7
    assert event.reply["error"]["code"] == -32600
    assert "exceeds the limit" in event.reply["error"]["data"]


def test_oversized_answer_fails_the_pending_call_and_sends_nothing() -> None:
    from accord.transports import LineDecoder

    endpoint = Endpoint()
    request_id, _ = endpoint.build_request("fs/read_text_file", {})
    decoder = LineDecoder(100)
    head = b'{"jsonrpc":"2.0","id":' + str(request_id).encode() + b',"result":{"content":"'
    frames = decoder.feed(head + b"y" * 150)
    frames += decoder.feed(b"z" * 150 + b'"}}\n')
    (frame,) = frames
    event = endpoint.receive(frame)
    assert isinstance(event, ResponseReceived)
    assert event.id == request_id
    assert event.error is not None and event.error.code == -32600
    assert endpoint.pending_requests == 0


def test_oversized_line_without_a_readable_envelope_gets_a_null_id() -> None:
    from accord.transports import LineDecoder

    (frame,) = LineDecoder(10).feed(b"[" + b"1," * 50 + b"1]\n")
    event = Endpoint().receive(frame)
    assert isinstance(event, InvalidMessage)
    assert event.reply["id"] is None
