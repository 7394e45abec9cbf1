#!/usr/bin/env bash
# Install the third-party ACP agents used by the interop tests (tests/interop/) into .interop/
# (gitignored), each in its own folder, at pinned versions:
#
#   .interop/acp-sdk-1/    npm @agentclientprotocol/sdk (1.x): dist/examples/agent.js (plays tool
#                          calls and a permission request without a model) and
#                          dist/examples/dual-version-agent.js (one process serving ACP v1 and v2)
#   .interop/acp-sdk-2/    npm @agentclientprotocol/sdk 2.x with `ws` and `zod`: its remote transports
#                          (WebSocket and Streamable HTTP, client and server), driven by the
#                          programs in tests/interop/remote_sdk/ (the examples are not in the
#                          npm package)
#   .interop/fast-agent/   PyPI fast-agent-mcp in its own venv (venv/bin/fast-agent), run as
#                          `fast-agent acp` with the built-in `passthrough` model or the `generic`
#                          provider pointed at a local FakeOpenAIServer; needs Python >= 3.12
#                          (found on PATH, through pyenv, or given as ACCORD_INTEROP_PYTHON)
#   .interop/gemini-cli/   npm @google/gemini-cli, run as `gemini --acp --fake-responses FILE`: the
#                          model is a file of scripted Gemini API responses (no account, no network)
#   .interop/tools/        a venv holding uv, the installer used for fast-agent (pip otherwise)
#
# Idempotent: each agent is skipped when its pinned version is already installed (a stamp file
# records it), so bumping a pin below reinstalls that agent only. A missing prerequisite (no
# Python >= 3.12) skips that agent with a warning: its tests then skip with the reason.
#
# Usage: scripts/fetch_interop_agents.sh            (`make interop-deps`, run by `make test`)
# Env:   ACCORD_INTEROP_PYTHON=/path/to/python3.12  interpreter for fast-agent's venv
#        ACCORD_INTEROP_STRICT=1                    fail instead of skipping an agent
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.interop"
mkdir -p "$DEST"

SDK1_VERSION="1.9.0"
SDK2_VERSION="2.4.0"
WS_VERSION="8.18.3"
ZOD_VERSION="3.25.76"
FAST_AGENT_VERSION="0.10.48"
GEMINI_CLI_VERSION="0.61.0"
UV_VERSION="0.13.9"

log() { echo "fetch_interop_agents: $*" >&2; }
skip() {
    if [[ "${ACCORD_INTEROP_STRICT:-}" == "1" ]]; then
        log "error: $*"
        exit 1
    fi
    log "warning: $* (its interop tests will skip)"
}
stamp_is() { [[ -f "$1/.installed" && "$(cat "$1/.installed")" == "$2" ]]; }
elapsed() { echo "$((SECONDS - $1))s"; }

# --- @agentclientprotocol/sdk 1.x examples (npm) --------------------------------------------
SDK1="$DEST/acp-sdk-1"
SDK1_EXAMPLES="$SDK1/node_modules/@agentclientprotocol/sdk/dist/examples"
if stamp_is "$SDK1" "$SDK1_VERSION" && [[ -s "$SDK1_EXAMPLES/agent.js" ]]; then
    :
elif ! command -v npm >/dev/null; then
    skip "npm not found: cannot install @agentclientprotocol/sdk@$SDK1_VERSION"
else
    start=$SECONDS
    rm -rf "$SDK1"
    mkdir -p "$SDK1"
    (cd "$SDK1" && npm init -y >/dev/null &&
        npm install --silent --no-audit --no-fund --save-exact \
            "@agentclientprotocol/sdk@$SDK1_VERSION" >/dev/null)
    for example in agent.js dual-version-agent.js; do
        [[ -s "$SDK1_EXAMPLES/$example" ]] || {
            log "error: @agentclientprotocol/sdk@$SDK1_VERSION has no dist/examples/$example"
            exit 1
        }
    done
    echo "$SDK1_VERSION" >"$SDK1/.installed"
    log "installed @agentclientprotocol/sdk@$SDK1_VERSION in $(elapsed "$start")"
fi

# --- @agentclientprotocol/sdk 2.x with ws and zod (npm): the remote transports ---------------
SDK2="$DEST/acp-sdk-2"
SDK2_STAMP="$SDK2_VERSION ws $WS_VERSION zod $ZOD_VERSION"
SDK2_TRANSPORTS="$SDK2/node_modules/@agentclientprotocol/sdk/dist/transports"
if stamp_is "$SDK2" "$SDK2_STAMP" && [[ -s "$SDK2_TRANSPORTS/server.js" ]]; then
    :
elif ! command -v npm >/dev/null; then
    skip "npm not found: cannot install @agentclientprotocol/sdk@$SDK2_VERSION"
else
    start=$SECONDS
    rm -rf "$SDK2"
    mkdir -p "$SDK2"
    (cd "$SDK2" && npm init -y >/dev/null &&
        npm install --silent --no-audit --no-fund --save-exact \
            "@agentclientprotocol/sdk@$SDK2_VERSION" "ws@$WS_VERSION" "zod@$ZOD_VERSION" >/dev/null)
    for module in server.js ws-stream.js http-stream.js node-adapter.js; do
        [[ -s "$SDK2_TRANSPORTS/$module" ]] || {
            log "error: @agentclientprotocol/sdk@$SDK2_VERSION has no dist/transports/$module"
            exit 1
        }
    done
    echo "$SDK2_STAMP" >"$SDK2/.installed"
    log "installed @agentclientprotocol/sdk@$SDK2_VERSION (ws, zod) in $(elapsed "$start")"
fi

# --- @google/gemini-cli (npm) -------------------------------------------------------------
GEMINI="$DEST/gemini-cli"
if stamp_is "$GEMINI" "$GEMINI_CLI_VERSION" && [[ -x "$GEMINI/node_modules/.bin/gemini" ]]; then
    :
elif ! command -v npm >/dev/null; then
    skip "npm not found: cannot install @google/gemini-cli@$GEMINI_CLI_VERSION"
else
    start=$SECONDS
    rm -rf "$GEMINI"
    mkdir -p "$GEMINI"
    (cd "$GEMINI" && npm init -y >/dev/null &&
        npm install --silent --no-audit --no-fund --save-exact \
            "@google/gemini-cli@$GEMINI_CLI_VERSION" >/dev/null)
    "$GEMINI/node_modules/.bin/gemini" --version >/dev/null
    echo "$GEMINI_CLI_VERSION" >"$GEMINI/.installed"
    log "installed @google/gemini-cli@$GEMINI_CLI_VERSION in $(elapsed "$start")"
fi

# --- fast-agent-mcp (PyPI), in its own venv ------------------------------------------------
# fast-agent-mcp >= 0.2.37 requires Python >= 3.12 (0.10.x: >=3.12,<3.16). On Python 3.11 pip
# silently resolves 0.2.36, which has no ACP server: never fall back to an older interpreter.
find_python() {
    local candidates=() py
    [[ -n "${ACCORD_INTEROP_PYTHON:-}" ]] && candidates+=("$ACCORD_INTEROP_PYTHON")
    for py in python3.13 python3.12 python3.14 python3; do
        command -v "$py" >/dev/null && candidates+=("$(command -v "$py")")
    done
    if command -v pyenv >/dev/null; then
        local root
        root="$(pyenv root)"
        for py in "$root"/versions/3.13*/bin/python3 "$root"/versions/3.12*/bin/python3 \
            "$root"/versions/3.14*/bin/python3; do
            [[ -x "$py" ]] && candidates+=("$py")
        done
    fi
    for py in "${candidates[@]}"; do
        if "$py" -c 'import sys; sys.exit(not (3, 12) <= sys.version_info[:2] < (3, 16))' \
            2>/dev/null; then
            echo "$py"
            return 0
        fi
    done
    return 1
}

# uv in its own venv: installs fast-agent in seconds where pip takes about two minutes.
ensure_uv() {
    local tools="$DEST/tools"
    if stamp_is "$tools" "uv $UV_VERSION" && [[ -x "$tools/venv/bin/uv" ]]; then
        echo "$tools/venv/bin/uv"
        return 0
    fi
    rm -rf "$tools"
    mkdir -p "$tools"
    python3 -m venv "$tools/venv" >&2 &&
        "$tools/venv/bin/pip" install -q --disable-pip-version-check "uv==$UV_VERSION" >&2 || {
        rm -rf "$tools"
        return 1
    }
    echo "uv $UV_VERSION" >"$tools/.installed"
    echo "$tools/venv/bin/uv"
}

FAST_AGENT="$DEST/fast-agent"
if stamp_is "$FAST_AGENT" "$FAST_AGENT_VERSION" && [[ -x "$FAST_AGENT/venv/bin/fast-agent" ]]; then
    :
elif ! PY="$(find_python)"; then
    skip "no Python >= 3.12 found (set ACCORD_INTEROP_PYTHON): cannot install fast-agent-mcp"
else
    start=$SECONDS
    rm -rf "$FAST_AGENT"
    mkdir -p "$FAST_AGENT"
    if UV="$(ensure_uv)"; then
        "$UV" venv -q --python "$PY" "$FAST_AGENT/venv"
        "$UV" pip install -q --python "$FAST_AGENT/venv/bin/python" \
            "fast-agent-mcp==$FAST_AGENT_VERSION"
    else
        log "uv unavailable; installing fast-agent-mcp with pip (slower)"
        "$PY" -m venv "$FAST_AGENT/venv"
        "$FAST_AGENT/venv/bin/pip" install -q --disable-pip-version-check \
            "fast-agent-mcp==$FAST_AGENT_VERSION"
    fi
    "$FAST_AGENT/venv/bin/fast-agent" --version >/dev/null
    echo "$FAST_AGENT_VERSION" >"$FAST_AGENT/.installed"
    log "installed fast-agent-mcp==$FAST_AGENT_VERSION ($("$PY" -V)) in $(elapsed "$start")"
fi

echo "interop agents ready in $DEST"
