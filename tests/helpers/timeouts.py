"""The one bound on how long a test waits, and the few bounds derived from it.

A test that waits for something that should happen (an answer, a line of output, a process to
exit) waits at most :data:`TIMEOUT`. The bound only matters when the test fails: a passing test
goes on as soon as the thing happens, so the bound is generous, chosen for a loaded two-core CI
machine rather than a laptop. Where a test genuinely needs another bound it derives it from
these names, with a comment saying why.

On a slower machine set ``ACCORD_TEST_TIMEOUT_SCALE`` (a positive number, default ``1``): every
bound here is multiplied by it. Raise pytest-timeout's per-test limit with it
(``pytest --timeout 180`` with a scale of 3); the ``timeout`` in ``pyproject.toml`` is set for
a scale of 1.
"""

from __future__ import annotations

import os


def _scale() -> float:
    raw = os.environ.get("ACCORD_TEST_TIMEOUT_SCALE", "1")
    try:
        scale = float(raw)
    except ValueError:
        raise ValueError(f"ACCORD_TEST_TIMEOUT_SCALE must be a number, not {raw!r}") from None
    if not scale > 0:
        raise ValueError(f"ACCORD_TEST_TIMEOUT_SCALE must be above 0, not {raw!r}")
    return scale


SCALE = _scale()
"""The factor from ``ACCORD_TEST_TIMEOUT_SCALE`` (1 unless set) applied to every bound here."""

TIMEOUT = 30.0 * SCALE
"""Seconds a test waits for one thing that should happen before it fails."""

SCENARIO_TIMEOUT = 4 * TIMEOUT
"""Seconds for a whole scenario under one bound: several processes, several turns (an editor
session end to end, a build and install, a run against a third-party agent), each step of which
could take up to :data:`TIMEOUT` on a loaded machine."""

QUIET = TIMEOUT / 60
"""Seconds a test watches for something that must *not* happen (half a second at scale 1):
long enough for a wrongly sent message on loopback or a pipe to arrive, short enough that the
suite does not idle. Only a wait that asserts absence uses it."""
