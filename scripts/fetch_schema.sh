#!/usr/bin/env bash
# Fetch the official ACP JSON Schemas from the npm package @agentclientprotocol/sdk into
# .schema-cache/ (gitignored). Idempotent: does nothing when the files are there.
#
#   .schema-cache/<version>/{v1,v2}/schema{,.unstable}.json   the pinned release (below)
#   .schema-cache/<version>/<path>                            each supplement of
#                                                             scripts/schema_sources.py (parts
#                                                             upstream moved out of the JSON
#                                                             schema, from the last release
#                                                             that carried them: NES from 1.4.0)
#
# Usage: scripts/fetch_schema.sh [version]     (default: the version pinned below)
set -euo pipefail

VERSION="${1:-2.4.0}"
PACKAGE="@agentclientprotocol/sdk"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CACHE="$ROOT/.schema-cache"
FILES=(v1/schema.json v1/schema.unstable.json v2/schema.json v2/schema.unstable.json)

tmp=""
trap 'rm -rf "$tmp"' EXIT

# fetch VERSION DEST SRC... : copy package/schema/SRC of PACKAGE@VERSION to DEST/SRC, unless all
# are there already.
fetch() {
    local version=$1 dest=$2
    shift 2
    local missing=0 f
    for f in "$@"; do
        [[ -s "$dest/$f" ]] || missing=1
    done
    if [[ $missing -eq 0 ]]; then
        echo "schema $PACKAGE@$version already in $dest"
        return 0
    fi
    tmp="$(mktemp -d)"
    (cd "$tmp" && npm pack --silent "$PACKAGE@$version" >/dev/null)
    tar -xzf "$tmp"/*.tgz -C "$tmp"
    for f in "$@"; do
        local src="$tmp/package/schema/$f"
        if [[ ! -s "$src" ]]; then
            echo "error: $PACKAGE@$version has no schema/$f" >&2
            exit 1
        fi
        mkdir -p "$(dirname "$dest/$f")"
        cp "$src" "$dest/$f.tmp"
        mv "$dest/$f.tmp" "$dest/$f"
    done
    rm -rf "$tmp"
    echo "fetched $PACKAGE@$version schemas into $dest"
}

fetch "$VERSION" "$CACHE/$VERSION" "${FILES[@]}"
while read -r version path; do
    fetch "$version" "$CACHE/$version" "$path"
done < <(python3 "$ROOT/scripts/schema_sources.py" --files)
