"""The activity projection: compact, versioned, and free of anything private (one test per rule)."""

from __future__ import annotations

import dataclasses
import hashlib
import typing

import orjson
import pytest
from _events_samples import SECRET_PATH, SECRET_URL, SECRETS, envelope, sample_events

from accord.engines import (
    Event,
    ModeChanged,
    ModelCallStarted,
    SubAgentStarted,
    TextChunk,
    ToolCallStarted,
    TurnCompleted,
    TurnError,
    UsageReported,
)
from accord.events import (
    ACTIVITY_SCHEMA_VERSION,
    LABEL_LIMIT_BYTES,
    activity_to_json,
    correlation_id,
    to_activity,
)
from accord.schema import Cost, TextContentBlock

SAMPLES = sample_events()


def _record(event: Event) -> dict[str, object]:
    return orjson.loads(activity_to_json(to_activity(envelope(event))))


# Rule: exhaustive, compact, versioned.


def test_every_event_kind_projects() -> None:
    kinds = {cls.__dataclass_fields__["kind"].default for cls in typing.get_args(Event)}
    projected = {to_activity(envelope(event)).kind for event in SAMPLES}
    assert projected == kinds


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.kind)
def test_record_is_versioned_and_leaves_out_empty_fields(event: Event) -> None:
    record = _record(event)
    assert record["schema_version"] == ACTIVITY_SCHEMA_VERSION
    assert record["kind"] == event.kind
    assert record["layer"] == event.layer
    assert record["seq"] == 1
    assert None not in record.values()


def test_record_shape_of_a_text_chunk() -> None:
    text = "héllo"
    record = _record(TextChunk(message_id="m", content=TextContentBlock(text=text)))
    assert record == {
        "schema_version": ACTIVITY_SCHEMA_VERSION,
        "session": correlation_id("accord/session", "s-1"),
        "seq": 1,
        "epoch": 0,
        "turn": correlation_id("accord/turn", "t-1"),
        "agent": correlation_id("accord/agent", "root"),
        "layer": "render",
        "kind": "text_chunk",
        "message": correlation_id("accord/message", "m"),
        "content_type": "text",
        "size": len(text.encode()),
    }


# Rule: no text, prompt, reasoning, tool input/output, path, URL or error text.


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.kind)
def test_no_secret_reaches_the_record(event: Event) -> None:
    data = activity_to_json(to_activity(envelope(event))).decode()
    leaked = [secret for secret in SECRETS if secret.lower() in data.lower()]
    assert not leaked, data


def test_ids_that_carry_secrets_are_not_revealed() -> None:
    env = dataclasses.replace(
        envelope(ToolCallStarted(tool_call_id=SECRET_PATH, title="t")),
        session_id=SECRET_URL,
        turn_id=SECRET_PATH,
        agent_id=SECRET_URL,
    )
    data = activity_to_json(to_activity(env)).decode()
    assert not [secret for secret in SECRETS if secret in data]


# Rule: correlation ids are the first 12 bytes of SHA-256 over a namespace and the value.


def test_correlation_id_definition() -> None:
    expected = hashlib.sha256(b"accord/turn\x00t-1").digest()[:12].hex()
    assert correlation_id("accord/turn", "t-1") == expected
    assert len(expected) == 24


def test_correlation_ids_join_records_but_differ_by_namespace() -> None:
    first = _record(TextChunk(message_id="m", content=TextContentBlock(text="a")))
    second = _record(TextChunk(message_id="m", content=TextContentBlock(text="b")))
    assert first["message"] == second["message"]
    assert correlation_id("accord/message", "x") != correlation_id("accord/turn", "x")
    sub = _record(SubAgentStarted(sub_agent_id="root", name="helper"))
    assert sub["sub_agent"] == sub["agent"]  # a sub-agent's id joins its own events


# Rule: free text is an identifier-like label cut to 128 bytes, or replaced by a hash.


def test_labels_are_kept_when_they_look_like_identifiers() -> None:
    assert _record(ModelCallStarted(call_id="c", model="openai:gpt-4o"))["model"] == "openai:gpt-4o"
    assert _record(ModelCallStarted(call_id="c", model="org/model-1.5"))["model"] == "org/model-1.5"
    assert (
        _record(TurnError(error_type="TimeoutError", message="x"))["error_type"] == "TimeoutError"
    )


def test_labels_are_cut_to_128_bytes() -> None:
    long = "m" * 500
    assert _record(ModeChanged(mode_id=long))["mode"] == "m" * LABEL_LIMIT_BYTES


@pytest.mark.parametrize(
    "value",
    [
        SECRET_PATH,
        SECRET_URL,
        "relative/path/to/file",
        "C:\\Users\\alice",
        "a sentence with spaces",
        "~/.config",
        "héllo",
    ],
)
def test_labels_that_are_not_identifiers_are_hashed(value: str) -> None:
    label = _record(ModelCallStarted(call_id="c", model=value))["model"]
    assert label == "#" + correlation_id("accord/label", value)


# Rule: literal fields are whitelisted at run time.


def test_unknown_literal_values_become_other() -> None:
    bogus_status = TurnCompleted(stop_reason=SECRET_PATH)  # type: ignore[arg-type]
    assert _record(bogus_status)["status"] == "other"
    bogus_kind = ToolCallStarted(tool_call_id="c", title="t", tool_kind=SECRET_URL)  # type: ignore[arg-type]
    assert _record(bogus_kind)["tool_kind"] == "other"
    usage = UsageReported(used=1, size=2, cost=Cost(amount=1.0, currency=SECRET_URL))
    assert _record(usage)["currency"] == "other"
    assert (
        _record(UsageReported(used=1, size=2, cost=Cost(amount=1.0, currency="EUR")))["currency"]
        == "EUR"
    )
