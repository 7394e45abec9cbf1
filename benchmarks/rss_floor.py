"""The memory floor under accord's agent: anyio and pydantic alone, no accord.

A process that imports what every accord agent imports (anyio on asyncio, pydantic, orjson,
logging), validates and dumps two small models and runs an event loop, then prints its peak
RSS in MB. The difference to ``bench_protocol.py``'s agent peak is what accord itself costs.

Run: ``python benchmarks/rss_floor.py``.
"""

from __future__ import annotations

import logging
import resource

import anyio
import anyio.lowlevel
import orjson
from pydantic import BaseModel, ConfigDict


class Text(BaseModel):
    """A text block, as a minimal wire model."""

    model_config = ConfigDict(extra="allow")
    type: str = "text"
    text: str


class Prompt(BaseModel):
    """A prompt, as a minimal wire model with a nested list."""

    model_config = ConfigDict(extra="allow")
    sessionId: str
    prompt: list[Text]


async def main() -> None:
    logging.getLogger("floor").debug("started")
    prompt = Prompt.model_validate({"sessionId": "s", "prompt": [{"type": "text", "text": "x"}]})
    orjson.dumps(prompt.model_dump())
    await anyio.lowlevel.checkpoint()
    print(f"peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.1f} MB")


if __name__ == "__main__":
    anyio.run(main)
