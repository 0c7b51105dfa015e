#!/usr/bin/env bash
# The official MCP conformance suite against mcp_ref (tests/conformance/README.md).
# Installs Node 22 from the npm registry into a cache outside the repo (reused when present),
# then runs tests/conformance/run.py: the 2025-11-25 requirement set for server and client, every
# scenario at 2025-11-25, and the server suite at 2025-06-18, each against the expected-failures baseline.  Exits non-zero on an unexpected failure
# or a stale baseline entry.  Arguments are passed to run.py (e.g. a suite name).
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_DIR="${MCP_REF_NODE_DIR:-${HOME:-/tmp}/.cache/mcp-ref-node22}"

node_major() { "$1" --version 2>/dev/null | sed -n 's/^v\([0-9]*\).*/\1/p'; }

if [ "$(node_major "$NODE_DIR/node_modules/.bin/node")" != "22" ]; then
    echo "conformance.sh: installing Node 22 into $NODE_DIR"
    mkdir -p "$NODE_DIR"
    (cd "$NODE_DIR" && npm install --no-save --no-audit --no-fund --loglevel=error node@22)
fi
export PATH="$NODE_DIR/node_modules/.bin:$PATH"
if [ "$(node_major node)" -lt 22 ] 2>/dev/null || [ -z "$(node_major node)" ]; then
    echo "conformance.sh: Node 22 is not available (node is $(node --version 2>&1))" >&2
    exit 1
fi
echo "conformance.sh: node $(node --version), npx $(npx --version 2>/dev/null)"

exec python tests/conformance/run.py "$@"
