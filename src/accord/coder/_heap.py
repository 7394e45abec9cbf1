"""Keep a long-running agent's garbage-collector pauses short: freeze what start-up built.

CPython's cycle collector walks every object of the generation it collects; a full (oldest
generation) collection walks the whole heap. After the model code has loaded and a first turn
has run, most of the heap is objects that live as long as the process (modules, classes,
pydantic-core validators and serializers, the shared model and HTTP client, tool schemas):
about 200,000 container objects in ``accord serve``. Measured in the soak benchmark
(``benchmarks/bench_soak.py``), each full collection then stopped the event loop for
230-370 ms, twice every 15 s, and every request in flight waited for it; with those objects
frozen the same collections took 20-150 ms on the same (loaded) machine.

:func:`freeze_heap` first collects, so nothing already garbage is frozen (frozen objects are
never collected, though reference counting still frees them), then moves every remaining
object into the permanent generation (:func:`gc.freeze`). It is a process-wide decision, so
only ``accord serve`` asks for it (``CoderRuntime(freeze_heap=True)``), never the library by
default.

Above: :mod:`._runtime`. Below: :mod:`gc`.
"""

from __future__ import annotations

import gc

__all__ = ("freeze_heap",)


def freeze_heap() -> int:
    """Collect garbage, then freeze every object left; return how many are frozen in all."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()
