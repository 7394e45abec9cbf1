#!/usr/bin/env bash
# Install the third-party ACP agents used by the interop tests into .interop/ (gitignored):
# the example agent shipped by @agentclientprotocol/sdk 1.x (dist/examples/agent.js).
# Idempotent; each download is skipped when already present.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.interop"
mkdir -p "$DEST"

SDK1="$DEST/acp-sdk-1"
if [[ ! -s "$SDK1/node_modules/@agentclientprotocol/sdk/dist/examples/agent.js" ]]; then
    mkdir -p "$SDK1"
    (cd "$SDK1" && npm init -y >/dev/null && npm install --silent --no-audit --no-fund "@agentclientprotocol/sdk@1" >/dev/null)
fi
echo "interop agents ready in $DEST"
