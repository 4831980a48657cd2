#!/usr/bin/env bash
# Installs the SGLang routers the e2e tests run, from PyPI, into cached virtual environments outside
# the repository, keyed by version:
#   $POOL_K8S_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/pool-controller)/routers/smg-1.13.0/
#   $POOL_K8S_CACHE/routers/sglang-router-0.3.2/
# Each holds a virtual environment whose bin/ has the router's executable (`smg` for smg 1.13.0;
# `sglang-router`, also named `smg` and `amg`, for sglang-router 0.3.2). A venv counts as cached
# once its `installed` marker exists (written last, so an interrupted install is redone).
# Safe to run concurrently (several helpers share one machine): installs are serialised by a lock.
# Every step is announced; a failure names the step that failed.
# Keep the versions in step with routers.ts beside this script.
set -euo pipefail

cache_root=${POOL_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pool-controller}
routers_root="$cache_root/routers"
python=${POOL_ROUTERS_PYTHON:-python3}
current_step="start"

step() {
  current_step=$1
  echo "routers: $1"
}
trap 'echo "routers: FAILED at step: ${current_step}" >&2' ERR

# <package> <version> <executable>
routers=(
  "smg 1.13.0 smg"
  "sglang-router 0.3.2 sglang-router"
)

is_cached() { # <dir> <executable>
  [[ -f "$1/installed" && -x "$1/venv/bin/$2" ]]
}

all_cached() {
  local entry package version executable
  for entry in "${routers[@]}"; do
    read -r package version executable <<<"$entry"
    is_cached "$routers_root/$package-$version" "$executable" || return 1
  done
}

if all_cached; then
  echo "routers: cached smg 1.13.0 and sglang-router 0.3.2 in $routers_root"
  exit 0
fi

step "check python ($python) with venv"
command -v "$python" >/dev/null || { echo "routers: no '$python' on PATH (Python >= 3.9 is needed)" >&2; false; }
"$python" -c 'import sys, venv; assert sys.version_info >= (3, 9), sys.version'

mkdir -p "$routers_root"
step "wait for the install lock ($routers_root/.install.lock)"
exec 9>"$routers_root/.install.lock"
flock 9

install() { # <package> <version> <executable>
  local package=$1 version=$2 executable=$3 dir="$routers_root/$1-$2" started
  if is_cached "$dir" "$executable"; then
    echo "routers: $package $version already cached in $dir"
    return
  fi
  started=$(date +%s)
  step "create the virtual environment for $package $version in $dir"
  rm -rf "$dir"
  mkdir -p "$dir"
  "$python" -m venv "$dir/venv"
  step "pip install $package==$version"
  "$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$package==$version"
  step "check $package $version runs ($executable --help)"
  "$dir/venv/bin/$executable" --help >/dev/null
  date -u +%Y-%m-%dT%H:%M:%SZ >"$dir/installed"
  echo "routers: $package $version installed in $(($(date +%s) - started))s"
}

for entry in "${routers[@]}"; do
  read -r package version executable <<<"$entry"
  install "$package" "$version" "$executable"
done
echo "routers: done (smg 1.13.0, sglang-router 0.3.2 in $routers_root)"
