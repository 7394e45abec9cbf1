"""Public test kit: fakes and checks for testing accord agents and clients offline.

Importable without pytest:

* ``FakeOpenAIServer``: a scripted OpenAI-compatible server on loopback, chat completions and
  the Responses API (also runnable as ``python -m accord.testing.fake_openai``), so real
  model-provider code runs offline; ``FakeAnthropicServer``: the same for the Anthropic
  Messages API;
* ``ScriptedEngine``: an engine that plays a script per prompt (text, thoughts, tool calls with
  permission questions, plans, usage, pauses), for testing the agent runtime and clients;
* ``HostileModel``, ``HostileWorkspace``, ``hostile_calls``: a hostile model (tool calls with
  path escapes, special files, backtracking patterns, NULs, invalid arguments...) and a project
  full of traps, for testing coding agents (the coder's tests use them);
* ``run_hostile_agent``, ``play_hostile_agent``, ``HOSTILE_ATTACKS``, ``HostileOptions``: a
  hostile agent (path escapes, ids of the wrong type, floods for unknown sessions, ambiguous
  permission questions, escape sequences, NULs, lone surrogates, lines over the limit, messages
  trickled byte by byte, a line that never ends, a flood of notifications), for testing ACP
  clients (accord's client tests use it); also an agent command over stdio, ``python -m
  accord.testing.hostile_agent [--attack NAME]``, to point any client at;
* ``HTTP_ATTACKS``, ``run_http_attack``, ``hold_connections``, ``server_alive``,
  ``WEBSOCKET_ATTACKS``, ``run_websocket_attack``: a hostile HTTP and WebSocket client
  (request smuggling, almost-right tokens, DNS-rebinding ``Host`` names, ``Origin``
  look-alikes, floods of idle and trickling sockets, hostile frames) for testing any ACP
  server at ``/acp`` (accord's server tests use it);
* ``HOSTILE_IDS``, ``play_hostile_ids``, ``id_request``, ``check_answer``, ``check_refusal``,
  ``websocket_wire``, ``streamable_http_wire``: hostile JSON-RPC request ids (1 MiB strings,
  nested objects, floats, booleans, integers past 64 bits, null) and the checks JSON-RPC 2.0
  sets for their answers, for any ACP peer over stdio, WebSocket or Streamable HTTP;
* ``check_transport``: the conformance suite every transport pair must pass, and
  ``pipe_transport_pair`` (two transports over real OS pipes).
"""

from ._fake_anthropic import FakeAnthropicServer as FakeAnthropicServer
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
from ._hostile_agent import HOSTILE_ATTACKS as HOSTILE_ATTACKS
from ._hostile_agent import HostileExchange as HostileExchange
from ._hostile_agent import HostileOptions as HostileOptions
from ._hostile_agent import HostileReport as HostileReport
from ._hostile_agent import play_hostile_agent as play_hostile_agent
from ._hostile_agent import run_hostile_agent as run_hostile_agent
from ._hostile_http import HTTP_ATTACKS as HTTP_ATTACKS
from ._hostile_http import Flood as Flood
from ._hostile_http import HttpAttack as HttpAttack
from ._hostile_http import HttpOutcome as HttpOutcome
from ._hostile_http import HttpResponse as HttpResponse
from ._hostile_http import HttpTarget as HttpTarget
from ._hostile_http import hold_connections as hold_connections
from ._hostile_http import read_responses as read_responses
from ._hostile_http import run_http_attack as run_http_attack
from ._hostile_http import server_alive as server_alive
from ._hostile_ids import HOSTILE_IDS as HOSTILE_IDS
from ._hostile_ids import HostileId as HostileId
from ._hostile_ids import IdWire as IdWire
from ._hostile_ids import StreamableHttpWire as StreamableHttpWire
from ._hostile_ids import check_answer as check_answer
from ._hostile_ids import check_refusal as check_refusal
from ._hostile_ids import id_request as id_request
from ._hostile_ids import next_answer as next_answer
from ._hostile_ids import play_hostile_ids as play_hostile_ids
from ._hostile_ids import streamable_http_wire as streamable_http_wire
from ._hostile_ids import websocket_wire as websocket_wire
from ._hostile_model import BACKTRACKING_PATTERN as BACKTRACKING_PATTERN
from ._hostile_model import HostileAnswer as HostileAnswer
from ._hostile_model import HostileCall as HostileCall
from ._hostile_model import HostileModel as HostileModel
from ._hostile_model import HostileWorkspace as HostileWorkspace
from ._hostile_model import hostile_calls as hostile_calls
from ._hostile_websocket import WEBSOCKET_ATTACKS as WEBSOCKET_ATTACKS
from ._hostile_websocket import WebSocketAttack as WebSocketAttack
from ._hostile_websocket import WebSocketOutcome as WebSocketOutcome
from ._hostile_websocket import run_websocket_attack as run_websocket_attack
from ._scripted_engine import ChangeCommands as ChangeCommands
from ._scripted_engine import ChangeMode as ChangeMode
from ._scripted_engine import Emit as Emit
from ._scripted_engine import Fail as Fail
from ._scripted_engine import Pause as Pause
from ._scripted_engine import ReportUsage as ReportUsage
from ._scripted_engine import Say as Say
from ._scripted_engine import ScriptedEngine as ScriptedEngine
from ._scripted_engine import ScriptedSession as ScriptedSession
from ._scripted_engine import ScriptStep as ScriptStep
from ._scripted_engine import SetPlan as SetPlan
from ._scripted_engine import SetTitle as SetTitle
from ._scripted_engine import Stop as Stop
from ._scripted_engine import Stream as Stream
from ._scripted_engine import Think as Think
from ._scripted_engine import UseTool as UseTool
from ._scripted_engine import WaitFor as WaitFor
from ._scripted_engine import WaitForCancel as WaitForCancel
from ._transport_check import MakeTransportPair as MakeTransportPair
from ._transport_check import check_transport as check_transport
from ._transport_check import pipe_transport_pair as pipe_transport_pair

__all__ = (
    "BACKTRACKING_PATTERN",
    "HOSTILE_ATTACKS",
    "HOSTILE_IDS",
    "HTTP_ATTACKS",
    "MAX_DELAY",
    "MAX_HANG",
    "WEBSOCKET_ATTACKS",
    "ChangeCommands",
    "ChangeMode",
    "Emit",
    "Fail",
    "FakeAnthropicServer",
    "FakeOpenAIServer",
    "Flood",
    "HostileAnswer",
    "HostileCall",
    "HostileExchange",
    "HostileId",
    "HostileModel",
    "HostileOptions",
    "HostileReport",
    "HostileWorkspace",
    "HttpAttack",
    "HttpOutcome",
    "HttpResponse",
    "HttpTarget",
    "IdWire",
    "MakeTransportPair",
    "Outcome",
    "Pause",
    "RecordedRequest",
    "ReplyFunction",
    "ReportUsage",
    "Say",
    "Script",
    "ScriptStep",
    "ScriptedEngine",
    "ScriptedError",
    "ScriptedReply",
    "ScriptedSession",
    "ScriptedToolCall",
    "ScriptedUsage",
    "SetPlan",
    "SetTitle",
    "Stop",
    "Stream",
    "StreamableHttpWire",
    "Think",
    "UseTool",
    "WaitFor",
    "WaitForCancel",
    "WebSocketAttack",
    "WebSocketOutcome",
    "check_answer",
    "check_refusal",
    "check_transport",
    "dump_script",
    "hold_connections",
    "hostile_calls",
    "id_request",
    "load_script",
    "next_answer",
    "pipe_transport_pair",
    "play_hostile_agent",
    "play_hostile_ids",
    "read_responses",
    "run_hostile_agent",
    "run_http_attack",
    "run_websocket_attack",
    "server_alive",
    "streamable_http_wire",
    "websocket_wire",
)
