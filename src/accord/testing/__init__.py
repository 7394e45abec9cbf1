"""Public test kit: fakes and helpers for testing accord agents and clients offline.

Importable without pytest. Contents so far: `FakeOpenAIServer`, a scripted OpenAI-compatible
chat-completions server on loopback (also runnable as `python -m accord.testing.fake_openai`).
"""

from ._fake_openai import FakeOpenAIServer as FakeOpenAIServer
from ._fake_openai import Outcome as Outcome
from ._fake_openai import RecordedRequest as RecordedRequest
from ._fake_openai_script import MAX_DELAY as MAX_DELAY
from ._fake_openai_script import MAX_HANG as MAX_HANG
from ._fake_openai_script import ReplyFunction as ReplyFunction
from ._fake_openai_script import Script as Script
from ._fake_openai_script import ScriptedError as ScriptedError
from ._fake_openai_script import ScriptedReply as ScriptedReply
from ._fake_openai_script import ScriptedToolCall as ScriptedToolCall
from ._fake_openai_script import ScriptedUsage as ScriptedUsage
from ._fake_openai_script import dump_script as dump_script
from ._fake_openai_script import load_script as load_script

__all__ = (
    "MAX_DELAY",
    "MAX_HANG",
    "FakeOpenAIServer",
    "Outcome",
    "RecordedRequest",
    "ReplyFunction",
    "Script",
    "ScriptedError",
    "ScriptedReply",
    "ScriptedToolCall",
    "ScriptedUsage",
    "dump_script",
    "load_script",
)
