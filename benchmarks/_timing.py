"""Timing helpers shared by the benchmark scripts: a wall + CPU timer and a rate."""

from __future__ import annotations

import time
from dataclasses import dataclass


@dataclass
class Rate:
    """Events per wall-clock second and per CPU second."""

    events: int
    wall: float
    cpu: float

    @property
    def per_wall_second(self) -> float:
        return self.events / self.wall

    @property
    def per_cpu_second(self) -> float:
        return self.events / self.cpu


class Timer:
    """Measures wall-clock and process CPU time (every thread) of a block."""

    def __enter__(self) -> Timer:
        self._wall = time.perf_counter()
        self._cpu = time.process_time()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.wall = time.perf_counter() - self._wall
        self.cpu = time.process_time() - self._cpu


def compile_accord() -> None:
    """Byte-compile accord's sources, as installing a package does.

    The project is installed in editable mode; where ``PYTHONDONTWRITEBYTECODE`` is set,
    every process would otherwise compile the modules it imports from source, which inflates
    start-up time and peak memory beyond what an installed accord costs.
    """
    import compileall
    from pathlib import Path

    import accord

    compileall.compile_dir(Path(accord.__file__).parent, quiet=1)
