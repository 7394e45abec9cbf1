"""The event union: closed, frozen, one kind and one fixed layer per class."""

from __future__ import annotations

import dataclasses
import typing
import uuid

import pytest
from _events_samples import sample_events

from accord.engines import Event, EventKind, Layer, TextChunk, new_id
from accord.schema import TextContentBlock

EVENT_CLASSES: tuple[type[Event], ...] = typing.get_args(Event)

EXPECTED_LAYERS: dict[str, Layer] = {
    "user_message_chunk": "render",
    "text_chunk": "render",
    "thinking_chunk": "render",
    "tool_call_started": "render",
    "tool_call_progress": "render",
    "tool_call_ended": "render",
    "plan_updated": "render",
    "permission_pending": "render",
    "budget_warning": "render",
    "mode_changed": "render",
    "config_changed": "render",
    "commands_changed": "render",
    "title_changed": "render",
    "usage_reported": "render",
    "compaction_changed": "render",
    "compaction_summary_chunk": "render",
    "turn_completed": "state",
    "state_snapshot": "state",
    "model_call_started": "observe",
    "model_call_ended": "observe",
    "messages_compacted": "observe",
    "turn_error": "observe",
    "sub_agent_started": "observe",
    "sub_agent_stopped": "observe",
}


def _kind(cls: type[Event]) -> str:
    field = next(f for f in dataclasses.fields(cls) if f.name == "kind")
    assert isinstance(field.default, str)
    return field.default


def test_kinds_are_unique_and_match_the_kind_literal() -> None:
    kinds = [_kind(cls) for cls in EVENT_CLASSES]
    assert len(kinds) == len(set(kinds))
    assert set(kinds) == set(typing.get_args(EventKind))


def test_each_class_has_its_fixed_layer() -> None:
    assert {_kind(cls): cls.layer for cls in EVENT_CLASSES} == EXPECTED_LAYERS


def test_samples_cover_every_event_class() -> None:
    assert {type(event) for event in sample_events()} == set(EVENT_CLASSES)


@pytest.mark.parametrize("cls", EVENT_CLASSES, ids=_kind)
def test_events_are_frozen_slotted_keyword_only(cls: type[Event]) -> None:
    params = getattr(cls, "__dataclass_params__")  # noqa: B009
    assert params.frozen
    assert "__slots__" in cls.__dict__
    assert all(f.kw_only for f in dataclasses.fields(cls))


def test_an_event_cannot_be_changed() -> None:
    event = TextChunk(message_id="m", content=TextContentBlock(text="hi"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.message_id = "other"  # type: ignore[misc]


def test_new_id_is_a_uuid7_and_sorts_by_creation() -> None:
    ids = [new_id() for _ in range(100)]
    assert all(uuid.UUID(i).version == 7 for i in ids)
    assert ids == sorted(ids)
    assert len(set(ids)) == len(ids)
