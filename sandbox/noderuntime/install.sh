#!/usr/bin/env bash
# Installs the Node.js runtime of the embedded sandbox (jest, Babel,
# lodash ...) into DIR, by default /usr/local/lib/verl-score/node, where
# the sandbox looks for it (or set VERL_SCORE_NODE_RUNTIME to DIR). It
# needs npm and the registry once; runs use it offline from then on.
set -euo pipefail
dir="${1:-/usr/local/lib/verl-score/node}"
src="$(cd "$(dirname "$0")" && pwd)"
mkdir -p "$dir"
cp "$src/package.json" "$src/babel.config.js" "$dir/"
cd "$dir"
npm install --no-audit --no-fund --omit=dev
# Readable by the sandbox's per-run users.
chmod -R a+rX "$dir"
echo "node runtime installed in $dir"
