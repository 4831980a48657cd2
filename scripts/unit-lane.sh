#!/usr/bin/env bash
# Runs the unit suite on another Node.js than the pinned one: the engines floor, or the newest LTS
# line. The build in dist/ (made by `npm test` on the pinned Node) is reused; vitest and every
# child process a test starts (they use process.execPath) run on the lane's Node, and so does npm
# (first on PATH). POOL_CONTROLLER_TEST_NODE tells test/package/runtime.test.ts which Node to
# expect. Extra arguments go to vitest (a JSON report, say).
#   scripts/unit-lane.sh VERSION [vitest arguments...]
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
version=${1:?usage: scripts/unit-lane.sh VERSION [vitest arguments...]}
shift
bin=$(bash "$here/node-runtime.sh" "$version")
cd "$repo"
[[ -f dist/src/main.js ]] || { echo "unit lane: no build in dist/ (run npm test or npm run build first)" >&2; exit 1; }
echo "unit lane: the unit suite on Node $("$bin/node" --version)"
PATH="$bin:$PATH" POOL_CONTROLLER_TEST_NODE="$version" exec "$bin/node" node_modules/vitest/vitest.mjs run "$@"
