"""A turn for an engine under test: its context, cancel event and scripted permission answers.

The engine tests (``tests/engines``, the pydantic-ai adapter) and the coder's engine tests
(``tests/coder``) run turns straight on an engine session, below the agent runtime; the
runtime's part (asking the client's permission, cancelling) is played by :class:`Turn`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import anyio

from accord.engines import PermissionAnswer, PermissionOutcome, TurnContext, new_id
from accord.schema import PermissionOption, ToolCallUpdate


@dataclass
class Permissions:
    """Answers permission requests from a script (``answers``, in order) and records them.

    ``on_request`` (plain or async) runs on each request before it is answered; with
    ``block`` no answer ever comes (the turn must be cancelled).
    """

    answers: list[PermissionOutcome] = field(default_factory=list[PermissionOutcome])
    requests: list[ToolCallUpdate] = field(default_factory=list[ToolCallUpdate])
    agent_ids: list[str] = field(default_factory=list[str])
    options: list[Sequence[PermissionOption]] = field(
        default_factory=list[Sequence[PermissionOption]]
    )
    on_request: Callable[[], object] | None = None
    block: bool = False

    async def __call__(
        self, agent_id: str, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]
    ) -> PermissionAnswer:
        self.requests.append(tool_call)
        self.agent_ids.append(agent_id)
        self.options.append(options)
        if self.on_request is not None:
            done = self.on_request()
            if inspect.isawaitable(done):
                await done
        if self.block:
            await anyio.sleep_forever()
        outcome = self.answers.pop(0)
        return PermissionAnswer(
            outcome=outcome, option_id=None if outcome == "cancelled" else outcome
        )


class Turn:
    """A turn context for tests, with its cancel event and permission script at hand."""

    def __init__(
        self,
        *,
        answers: Sequence[PermissionOutcome] = (),
        mode_id: str | None = None,
        config_values: dict[str, str | bool] | None = None,
    ) -> None:
        self.cancel_event = anyio.Event()
        self.permissions = Permissions(list(answers))
        self.context = TurnContext(
            turn_id=new_id(),
            request_permission=self.permissions,
            cancel_event=self.cancel_event,
            mode_id=mode_id,
            config_values=config_values or {},
        )

    def cancel(self) -> None:
        """Cancel the turn, as the runtime does on ``session/cancel``."""
        self.cancel_event.set()
