"""One small state-machine helper: a transition table, its lookup and its diagram.

Every lifecycle in accord is a table ``(state, trigger) -> next state`` in which a missing pair
is an illegal step (the h11 rule: the table is the only place a state changes). A
:class:`StateTable` is that table, read-only (it is a ``Mapping``), with the one lookup every
lifecycle uses (:meth:`StateTable.step`) and the one drawing the docs embed
(:meth:`StateTable.diagram`). What an illegal step raises is the lifecycle's own business
(a peer's mistake, a busy session, a bug in the runtime), so the helper only reports it.

Used by the tool-call lifecycle (:mod:`._tool_calls`), the agent runtime's session lifecycle
and turn state (``accord.agent``) and the client's session and turn state (``accord.client``).
Sits on nothing of accord's.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Iterator, Mapping
from types import MappingProxyType
from typing import Generic, TypeVar, final

__all__ = ("StateTable",)

S = TypeVar("S", bound=Hashable)
T = TypeVar("T", bound=Hashable)


@final
class StateTable(Mapping[tuple[S, T], S], Generic[S, T]):
    """A lifecycle's transition table: ``(state, trigger) -> next state``; absent = illegal.

    Args:
        transitions: The legal steps.
        initial: Where the lifecycle starts (drawn as ``[*] --> initial``); ``None`` when the
            table has its own entry pairs (a state of ``None`` = not started yet).
        final: States the lifecycle ends in (drawn as ``state --> [*]``).
    """

    __slots__ = ("_table", "final", "initial")

    def __init__(
        self,
        transitions: Mapping[tuple[S, T], S],
        *,
        initial: S | None = None,
        final: Iterable[S] = (),
    ) -> None:
        """Build the table; see the class docstring for the arguments."""
        self._table: Mapping[tuple[S, T], S] = MappingProxyType(dict(transitions))
        self.initial = initial
        self.final: frozenset[S] = frozenset(final)

    def __getitem__(self, key: tuple[S, T]) -> S:
        """The next state of a legal ``(state, trigger)``; ``KeyError`` for an illegal one."""
        return self._table[key]

    def __iter__(self) -> Iterator[tuple[S, T]]:
        """The legal ``(state, trigger)`` pairs, in the order they were given."""
        return iter(self._table)

    def __len__(self) -> int:
        """How many legal steps there are."""
        return len(self._table)

    def step(self, state: S, trigger: T) -> S | None:
        """Return the state after ``trigger`` in ``state``, or ``None`` if that is illegal."""
        return self._table.get((state, trigger))

    def triggers(self, state: S) -> frozenset[T]:
        """The triggers that are legal in ``state``."""
        return frozenset(trigger for (source, trigger) in self._table if source == state)

    def diagram(self, *, loops: bool = True) -> str:
        """Return the table as a Mermaid state diagram (``loops=False``: omit self-loops)."""
        lines = ["stateDiagram-v2"]
        if self.initial is not None:
            lines.append(f"    [*] --> {self.initial}")
        for (state, trigger), target in self._table.items():
            if loops or state != target:
                lines.append(f"    {'[*]' if state is None else state} --> {target}: {trigger}")
        lines.extend(f"    {state} --> [*]" for state in sorted(self.final, key=str))
        return "\n".join(lines)
