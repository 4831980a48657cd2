#!/usr/bin/env bash
# Builds the binaries the e2e tests run — kube-apiserver and etcd — from the Go module proxy into a
# cache outside the repository, keyed by version:
#   $POOL_K8S_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/pool-controller)/k8s/<version>/kube-apiserver
#   $POOL_K8S_CACHE/etcd/<version>/etcd
# The versions are the ones go.mod beside this script pins. A binary is rebuilt only when it is
# missing or when go.mod/go.sum changed since it was built (recipe.sha256 beside it records that).
# Safe to run concurrently (several helpers share one machine): builds are serialised by a lock.
# Every step is announced; a failure names the step that failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache_root=${POOL_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pool-controller}
current_step="start"

step() {
  current_step=$1
  echo "e2e build: $1"
}
trap 'echo "e2e build: FAILED at step: ${current_step}" >&2' ERR

# Reads "<module> <version>" from go.mod's require block: the single source of the pinned versions.
pinned_version() {
  awk -v mod="$1" '$1 == mod && $2 ~ /^v/ { print $2; exit }' "$here/go.mod"
}

step "read pinned versions from go.mod"
k8s_version=$(pinned_version k8s.io/kubernetes)
etcd_version=$(pinned_version go.etcd.io/etcd/server/v3)
[[ -n $k8s_version && -n $etcd_version ]]
recipe=$(cat "$here/go.mod" "$here/go.sum" | sha256sum | cut -d' ' -f1)
apiserver_dir="$cache_root/k8s/$k8s_version"
etcd_dir="$cache_root/etcd/$etcd_version"

is_current() { # <dir> <binary>
  [[ -x "$1/$2" && -f "$1/recipe.sha256" && $(cat "$1/recipe.sha256") == "$recipe" ]]
}

if is_current "$apiserver_dir" kube-apiserver && is_current "$etcd_dir" etcd; then
  echo "e2e build: cached kube-apiserver $k8s_version and etcd $etcd_version in $cache_root"
  exit 0
fi

step "check the Go toolchain"
command -v go >/dev/null || { echo "e2e build: no 'go' on PATH (Go >= 1.26 is needed)" >&2; false; }
go version

mkdir -p "$cache_root"
step "wait for the build lock ($cache_root/.build.lock)"
exec 9>"$cache_root/.build.lock"
flock 9

# Reproducible: go.sum is committed and must not change (-mod=readonly); no cgo, so no C toolchain
# is involved; -trimpath and -s -w shrink the link step, which is a large part of the build.
export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0
cd "$here"

build() { # <dir> <binary> <package> [extra -ldflags]
  local dir=$1 binary=$2 package=$3 ldflags="-s -w ${4:-}" started
  if is_current "$dir" "$binary"; then
    echo "e2e build: $binary already cached in $dir"
    return
  fi
  step "build $binary ($package) into $dir"
  started=$(date +%s)
  mkdir -p "$dir"
  rm -f "$dir/recipe.sha256"
  go build -trimpath -ldflags="$ldflags" -o "$dir/$binary.partial.$$" "$package"
  mv -f "$dir/$binary.partial.$$" "$dir/$binary"
  step "check $binary runs"
  "$dir/$binary" --version >/dev/null
  echo "$recipe" >"$dir/recipe.sha256"
  echo "e2e build: $binary built in $(($(date +%s) - started))s"
}

step "download modules"
started=$(date +%s)
go mod download k8s.io/kubernetes go.etcd.io/etcd/server/v3
echo "e2e build: modules ready in $(($(date +%s) - started))s"

build "$etcd_dir" etcd go.etcd.io/etcd/server/v3
# Stamp the release into /version, as Kubernetes' own build does; a plain `go build` reports
# v0.0.0-master, which a client checking the server version would misread.
k8s_minor=${k8s_version#v*.}
k8s_minor=${k8s_minor%%.*}
k8s_major=${k8s_version#v}
k8s_major=${k8s_major%%.*}
version_pkg=k8s.io/component-base/version
build "$apiserver_dir" kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver \
  "-X $version_pkg.gitVersion=$k8s_version -X $version_pkg.gitMajor=$k8s_major -X $version_pkg.gitMinor=$k8s_minor -X $version_pkg.gitTreeState=clean"
echo "e2e build: done (kube-apiserver $k8s_version, etcd $etcd_version)"
