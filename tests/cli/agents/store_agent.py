"""An agent whose sessions outlive it: ``store_agent.py STORE`` keeps them in the JSON file STORE.

* ``session/new``: a new session ``s1``, ``s2``, ... with the request's ``cwd``.
* ``session/prompt``: answers ``[ID] turn N: PROMPT``, followed by `` (earlier: A / B)``
  listing the session's earlier prompts when there are some; the first prompt becomes the
  session's title.
* ``session/load``: replays the history (``user_message_chunk`` / ``agent_message_chunk``),
  then the session takes prompts again; an unknown id is ``-32002`` (resource not found).
* ``session/list``: every session (only those under ``cwd`` when given), most recently
  updated first; ``updatedAt`` is ``2030-01-01T00:00:SSZ`` with SS counting changes to the
  store, so the order is the order of activity.
* ``session/delete``: removes the session from the file; an unknown id is ``-32002``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from accord.errors import ResourceNotFound
from accord.roles import Agent, run_agent_stdio
from accord.schema import (
    AgentMessageChunkSessionUpdate,
    DeleteSessionRequest,
    DeleteSessionResponse,
    ListSessionsRequest,
    ListSessionsResponse,
    LoadSessionRequest,
    LoadSessionResponse,
    NewSessionRequest,
    NewSessionResponse,
    PromptRequest,
    PromptResponse,
    SessionInfo,
    SessionNotification,
    TextContentBlock,
    UserMessageChunkSessionUpdate,
)


class StoreAgent(Agent):
    def __init__(self, path: Path) -> None:
        self._path = path

    def _read(self) -> dict[str, Any]:
        if not self._path.exists():
            return {"changes": 0, "sessions": {}}
        return json.loads(self._path.read_text())

    def _write(self, store: dict[str, Any]) -> None:
        store["changes"] += 1
        self._path.write_text(json.dumps(store, indent=1))

    @staticmethod
    def _stamp(store: dict[str, Any]) -> str:
        return f"2030-01-01T00:00:{store['changes'] + 1:02d}Z"

    async def new_session(self, request: NewSessionRequest) -> NewSessionResponse:
        store = self._read()
        session_id = f"s{len(store['sessions']) + 1}"
        store["sessions"][session_id] = {
            "cwd": request.cwd,
            "title": None,
            "updatedAt": self._stamp(store),
            "history": [],
        }
        self._write(store)
        return NewSessionResponse(session_id=session_id)

    async def load_session(self, request: LoadSessionRequest) -> LoadSessionResponse:
        session = self._read()["sessions"].get(request.session_id)
        if session is None:
            raise ResourceNotFound(f"no stored session {request.session_id}")
        for role, text in session["history"]:
            content = TextContentBlock(text=text)
            update = (
                UserMessageChunkSessionUpdate(content=content)
                if role == "user"
                else AgentMessageChunkSessionUpdate(content=content)
            )
            await self.client.session_update(
                SessionNotification(session_id=request.session_id, update=update)
            )
        return LoadSessionResponse()

    async def list_sessions(self, request: ListSessionsRequest) -> ListSessionsResponse:
        sessions = [
            SessionInfo(
                session_id=session_id,
                cwd=session["cwd"],
                title=session["title"],
                updated_at=session["updatedAt"],
            )
            for session_id, session in self._read()["sessions"].items()
            if request.cwd is None or session["cwd"] == request.cwd
        ]
        sessions.sort(key=lambda info: info.updated_at or "", reverse=True)
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, request: DeleteSessionRequest) -> DeleteSessionResponse:
        store = self._read()
        if store["sessions"].pop(request.session_id, None) is None:
            raise ResourceNotFound(f"no stored session {request.session_id}")
        self._write(store)
        return DeleteSessionResponse()

    async def prompt(self, request: PromptRequest) -> PromptResponse:
        store = self._read()
        session = store["sessions"].get(request.session_id)
        if session is None:
            raise ResourceNotFound(f"no stored session {request.session_id}")
        text = " ".join(b.text for b in request.prompt if isinstance(b, TextContentBlock))
        earlier = [said for role, said in session["history"] if role == "user"]
        reply = f"[{request.session_id}] turn {len(earlier) + 1}: {text}"
        if earlier:
            reply += f" (earlier: {' / '.join(earlier)})"
        await self.client.session_update(
            SessionNotification(
                session_id=request.session_id,
                update=AgentMessageChunkSessionUpdate(content=TextContentBlock(text=reply)),
            )
        )
        session["history"] += [["user", text], ["agent", reply]]
        session["title"] = session["title"] or text
        session["updatedAt"] = self._stamp(store)
        self._write(store)
        return PromptResponse(stop_reason="end_turn")


if __name__ == "__main__":
    run_agent_stdio(StoreAgent(Path(sys.argv[1])))
