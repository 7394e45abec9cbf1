#!/usr/bin/env bash
# Fetch the official ACP JSON Schemas from the npm package @agentclientprotocol/sdk into
# .schema-cache/<version>/{v1,v2}/ (gitignored). Idempotent: does nothing when the files are there.
#
# Usage: scripts/fetch_schema.sh [version]     (default: the version pinned below)
set -euo pipefail

VERSION="${1:-2.4.0}"
PACKAGE="@agentclientprotocol/sdk"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEST="$ROOT/.schema-cache/$VERSION"
FILES=(v1/schema.json v1/schema.unstable.json v2/schema.json v2/schema.unstable.json)

missing=0
for f in "${FILES[@]}"; do
    [[ -s "$DEST/$f" ]] || missing=1
done
if [[ $missing -eq 0 ]]; then
    echo "schema $PACKAGE@$VERSION already in $DEST"
    exit 0
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack --silent "$PACKAGE@$VERSION" >/dev/null)
tar -xzf "$TMP"/*.tgz -C "$TMP"

for f in "${FILES[@]}"; do
    src="$TMP/package/schema/$f"
    if [[ ! -s "$src" ]]; then
        echo "error: $PACKAGE@$VERSION has no schema/$f" >&2
        exit 1
    fi
    mkdir -p "$(dirname "$DEST/$f")"
    cp "$src" "$DEST/$f.tmp"
    mv "$DEST/$f.tmp" "$DEST/$f"
done
echo "fetched $PACKAGE@$VERSION schemas into $DEST"
