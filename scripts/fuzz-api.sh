#!/usr/bin/env bash
# `npm run fuzz:api`: schemathesis against openapi.yaml and the running BUILT service on the
# simulated source, every check, twice: once with an admin token (--admin-token-file, sent as a
# bearer token) and once without one (POSTs then accepted from loopback only). Each run is bounded
# (--max-examples per operation, and a wall-clock budget). Any failure, or a run that cannot start,
# exits non-zero.
#
# schemathesis (pinned) is installed once into a cached venv:
#   ${XDG_CACHE_HOME:-~/.cache}/pool-controller/schemathesis-4.32.5/
#
# Env: FUZZ_MAX_EXAMPLES (default 30), FUZZ_BUDGET_SECONDS per run (default 240),
#      FUZZ_PYTHON (default python3), POOL_K8S_CACHE (cache root, as the e2e layer).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

version=4.32.5
cache_root=${POOL_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pool-controller}
venv="$cache_root/schemathesis-$version"
python=${FUZZ_PYTHON:-python3}
max_examples=${FUZZ_MAX_EXAMPLES:-30}
budget=${FUZZ_BUDGET_SECONDS:-240}

say() { echo "fuzz:api: $*"; }

if [[ ! -x "$venv/bin/st" || ! -f "$venv/installed" ]]; then
  say "installing schemathesis==$version into $venv"
  mkdir -p "$cache_root"
  # A lock, so two runs do not install into the same venv at once.
  exec 9>"$cache_root/.schemathesis.lock"
  flock 9
  if [[ ! -x "$venv/bin/st" || ! -f "$venv/installed" ]]; then
    rm -rf "$venv"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "schemathesis==$version"
    touch "$venv/installed"
  fi
  flock -u 9
fi
say "$("$venv/bin/st" --version 2>&1 | head -1)"

npm run --silent build

work=$(mktemp -d)
pid=""
cleanup() {
  if [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

# Starts the built service on a free loopback port; sets $pid and $base.
start_service() {
  local log="$work/service-$1.log"
  shift
  node dist/src/main.js --source simulated --listen 127.0.0.1:0 --log-format json \
    --simulation-step 200ms "$@" >"$log" 2>&1 &
  pid=$!
  base=""
  for _ in $(seq 1 200); do
    local port
    port=$(grep '"control plane listening"' "$log" 2>/dev/null | grep -o '"port":[0-9]*' | grep -o '[0-9]*' | head -1 || true)
    if [[ -n "$port" ]]; then
      base="http://127.0.0.1:$port"
      break
    fi
    kill -0 "$pid" 2>/dev/null || { cat "$log"; say "the service exited at start"; return 1; }
    sleep 0.1
  done
  [[ -n "$base" ]] || { cat "$log"; say "the service did not listen"; return 1; }
}

stop_service() {
  kill -TERM "$pid"
  local status=0
  wait "$pid" || status=$?
  pid=""
  if [[ "$status" -ne 0 ]]; then
    say "the service exited $status on SIGTERM"
    return 1
  fi
}

# One schemathesis run against $base with a schema; extra arguments go to `st run`. Its output goes
# through schemathesis-output.sed (pytest-style summary rules rewritten, see there); pipefail keeps
# st's exit status, the budget's 124 included.
fuzz() {
  local name=$1 schema=$2
  shift 2
  say "run '$name' against $base (max $max_examples examples per operation, budget ${budget}s)"
  local status=0
  # From the scratch folder: schemathesis leaves its reports (.schemathesis/) where it runs.
  (cd "$work" && timeout --signal=INT --kill-after=15 "$budget" \
    "$venv/bin/st" --no-color run "$schema" --url "$base" \
    --checks all \
    --max-examples "$max_examples" \
    --workers 1 \
    --seed 1 \
    --request-timeout 10 \
    "$@" 2>&1 | sed -u -E -f "$repo/scripts/schemathesis-output.sed") || status=$?
  if [[ "$status" -eq 124 || "$status" -eq 130 ]]; then
    say "run '$name' hit its ${budget}s budget"
    return 1
  fi
  return "$status"
}

failed=0

token="fuzz-$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s\n' "$token" >"$work/admin-token"
chmod 600 "$work/admin-token"

start_service with-token --admin-token-file "$work/admin-token"
fuzz "with admin token" "$repo/openapi.yaml" -H "Authorization: Bearer $token" || failed=1
stop_service || failed=1

# Without --admin-token-file the service accepts POSTs from loopback clients with no token (the
# documented default), so for this run the schema's security requirement does not apply: the
# same schema without it, every check still on (invalid bodies and parameters are still 400s).
"$venv/bin/python" - "$repo/openapi.yaml" "$work/openapi.no-token.yaml" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
doc.pop("security", None)
for item in doc.get("paths", {}).values():
    for operation in item.values():
        if isinstance(operation, dict):
            operation.pop("security", None)
yaml.safe_dump(doc, open(sys.argv[2], "w"), sort_keys=False)
PY
start_service without-token
fuzz "without admin token (loopback)" "$work/openapi.no-token.yaml" || failed=1
stop_service || failed=1

if [[ "$failed" -ne 0 ]]; then
  say "FAILED"
  exit 1
fi
say "ok: both runs passed every check"
