#!/usr/bin/env bash
# Compiles app.ts (TypeScript written for prom-client) with tsc --strict
# against this package's index.d.ts, with extra.ts (shmetrics' additions),
# then app.ts alone against prom-client's own index.d.ts: the same program
# must type-check on both. TSC and PROM_CLIENT_TYPES come from
# scripts/node-tests.sh.
set -euo pipefail
cd "$(dirname "$0")"
"$TSC" -p tsconfig.json
peer=$(mktemp -d)
trap 'rm -rf "$peer"' EXIT
cp app.ts "$peer/"
sed -i "s/'shmetrics'/'prom-client'/" "$peer/app.ts"
cat > "$peer/tsconfig.json" <<JSON
{"compilerOptions": {"strict": true, "noEmit": true, "target": "es2020", "module": "commonjs",
 "moduleResolution": "node", "types": [], "baseUrl": ".", "paths": {"prom-client": ["$PROM_CLIENT_TYPES"]}},
 "files": ["app.ts"]}
JSON
"$TSC" -p "$peer/tsconfig.json"
echo "app.ts type-checks against shmetrics' and prom-client's declarations"
