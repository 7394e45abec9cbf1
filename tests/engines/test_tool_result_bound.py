"""Tool results cut for the model (bound_tool_results): what the model sees, what the client
gets, and bad bounds refused."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import ModelRequest, ToolReturnPart, UserPromptPart

from accord.engines.pydantic_ai import bound_tool_results


def _request(*contents: object) -> ModelRequest:
    parts = [
        ToolReturnPart(tool_name="t", content=c, tool_call_id=f"c{i}")
        for i, c in enumerate(contents)
    ]
    return ModelRequest(parts=[UserPromptPart(content="hi"), *parts])


def _texts(messages: list[object]) -> list[str]:
    (request,) = messages
    assert isinstance(request, ModelRequest)
    return [p.model_response_str() for p in request.parts if isinstance(p, ToolReturnPart)]


def test_long_results_are_cut_with_a_note_and_short_ones_kept() -> None:
    process = bound_tool_results(100)
    small, exact, long = "s" * 10, "e" * 100, "x" * 250
    cut = process([_request(small, exact, long)])
    kept_small, kept_exact, cut_long = _texts(cut)
    assert (kept_small, kept_exact) == (small, exact)
    assert cut_long.startswith("x" * 100) and "x" * 101 not in cut_long
    assert "first 100 of 250 characters" in cut_long
    # run again before the next request: the same text, not a note on a note
    assert _texts(process(cut)) == [small, exact, cut_long]


def test_structured_results_are_cut_as_the_model_sees_them() -> None:
    process = bound_tool_results(50)
    (cut,) = _texts(process([_request({"rows": ["r" * 40] * 5})]))
    assert cut.startswith('{"rows":["rrrr') and "of 225 characters" in cut


def test_a_request_without_long_results_is_returned_as_it_was() -> None:
    message = _request("short")
    (same,) = bound_tool_results(100)([message])
    assert same is message


@pytest.mark.parametrize("limit", [0, -1, True, 2.5, "10"])
def test_a_bad_bound_is_refused(limit: object) -> None:
    with pytest.raises(ValueError, match="positive number of characters"):
        bound_tool_results(limit)  # type: ignore[arg-type]
