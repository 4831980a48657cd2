#!/usr/bin/env bash
# Builds the tools the chart, monitoring and real-cluster e2e tests run from the Go module proxy into
# the same cache as build.sh, keyed by version:
#   $POOL_K8S_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/pool-controller)/helm/<version>/helm
#   $POOL_K8S_CACHE/promtool/<version>/promtool
#   $POOL_K8S_CACHE/k8s-controllers/<version>/{kube-controller-manager,kube-scheduler} (the API
#     server's k8s.io/kubernetes pin: the script refuses a module that pins another)
#   $POOL_K8S_CACHE/kwok/<version>/kwok
#   $POOL_K8S_CACHE/lws/<version>/lws-manager, with the release's CRDs (crds/) and webhook
#     manifests (webhooks.yaml) beside it
# Each tool has its own module under test/e2e/tools/<tool>/ (go.mod + go.sum committed) so the two
# dependency graphs never get unified with each other or with the API server's. A binary is rebuilt
# only when it is missing or when its go.mod/go.sum changed since it was built (recipe.sha256).
# Usage: tools.sh [helm|promtool|kube-controllers|kwok|lws]... (default: helm and promtool; the
# real-cluster lane's three are built by `tools.sh kube-controllers kwok lws`, which .ci/run calls). Prints "<tool>=<path>" for each on success.
# Safe to run concurrently: tool builds are serialised by a lock of their own (.tools.lock), not
# build.sh's, so a tool build never waits out a kube-apiserver build; it runs under `nice` instead.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tools_root=$(cd "$here/../tools" && pwd)
cache_root=${POOL_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pool-controller}
current_step="start"

step() {
  current_step=$1
  echo "e2e tools: $1" >&2
}
trap 'echo "e2e tools: FAILED at step: ${current_step}" >&2' ERR

pinned_version() { # <module dir> <module>
  awk -v mod="$2" '$1 == mod && $2 ~ /^v/ { print $2; exit }' "$1/go.mod"
}
recipe_of() { # <module dir>
  cat "$1/go.mod" "$1/go.sum" | sha256sum | cut -d' ' -f1
}
is_current() { # <dir> <binary> <recipe>
  [[ -x "$1/$2" && -f "$1/recipe.sha256" && $(cat "$1/recipe.sha256") == "$3" ]]
}

locked=false
take_lock() {
  $locked && return
  step "check the Go toolchain"
  command -v go >/dev/null || { echo "e2e tools: no 'go' on PATH (Go >= 1.26 is needed)" >&2; false; }
  go version >&2
  mkdir -p "$cache_root"
  step "wait for the tools build lock ($cache_root/.tools.lock)"
  exec 9>"$cache_root/.tools.lock"
  flock 9
  locked=true
}

# Reproducible: go.sum is committed and must not change (-mod=readonly); no cgo; -trimpath and -s -w.
export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0

build() { # <tool> <module dir> <dir> <package> <version check args> [extra -ldflags]
  local tool=$1 module=$2 dir=$3 package=$4 check=$5 ldflags="-s -w ${6:-}" recipe started size
  recipe=$(recipe_of "$module")
  if ! is_current "$dir" "$tool" "$recipe"; then
    take_lock
  fi
  if is_current "$dir" "$tool" "$recipe"; then # checked again under the lock: another run may have built it
    echo "e2e tools: cached $tool in $dir" >&2
    echo "$tool=$dir/$tool"
    return
  fi
  step "download modules for $tool"
  started=$(date +%s)
  (cd "$module" && go list -deps "$package" >/dev/null) # only the modules the build needs, not their tests'.
  echo "e2e tools: modules for $tool ready in $(($(date +%s) - started))s" >&2
  step "build $tool ($package) into $dir"
  started=$(date +%s)
  mkdir -p "$dir"
  rm -f "$dir/recipe.sha256"
  (cd "$module" && nice go build -trimpath -ldflags="$ldflags" -o "$dir/$tool.partial.$$" "$package")
  mv -f "$dir/$tool.partial.$$" "$dir/$tool"
  step "check $tool runs"
  # shellcheck disable=SC2086 # the check is a word list
  "$dir/$tool" $check >&2
  if [[ -n ${after_build:-} ]]; then
    step "$after_build"
    "${after_build_command[@]}"
  fi
  echo "$recipe" >"$dir/recipe.sha256"
  size=$(du -m "$dir/$tool" | cut -f1)
  echo "e2e tools: $tool built in $(($(date +%s) - started))s (${size} MB)" >&2
  echo "$tool=$dir/$tool"
}

build_helm() {
  local module="$tools_root/helm" version client_go k8s_minor
  step "read the pinned helm version"
  version=$(pinned_version "$module" helm.sh/helm/v3)
  client_go=$(pinned_version "$module" k8s.io/client-go)
  [[ -n $version && -n $client_go ]]
  # As helm's Makefile does: the Kubernetes version `helm template`/`lint` assume (Capabilities,
  # deprecation checks) is the one its client-go is from (v0.N.x is Kubernetes 1.N), not 1.20.
  k8s_minor=${client_go#v0.}
  k8s_minor=${k8s_minor%%.*}
  build helm "$module" "$cache_root/helm/$version" helm.sh/helm/v3/cmd/helm "version --short" \
    "-X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/internal/version.gitTreeState=clean \
     -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=$k8s_minor \
     -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=$k8s_minor"
}

build_promtool() {
  local module="$tools_root/promtool" version release
  step "read the pinned promtool version"
  version=$(pinned_version "$module" github.com/prometheus/prometheus)
  [[ -n $version ]]
  # The Go module is tagged v0.3MM.P for Prometheus 3.MM.P: stamp the release it is.
  release=${version#v0.3}
  release="3.$((10#${release%%.*})).${release#*.}"
  build promtool "$module" "$cache_root/promtool/$version" github.com/prometheus/prometheus/cmd/promtool "--version" \
    "-X github.com/prometheus/common/version.Version=$release -X github.com/prometheus/common/version.Branch=$version"
}

# kube-controller-manager and kube-scheduler: the same release as kube-apiserver, stamped the way
# build.sh stamps it (a plain `go build` reports v0.0.0-master).
build_kube_controllers() {
  local module="$tools_root/kube-controllers" version apiserver_version major minor stamp binary
  step "read the pinned Kubernetes version"
  version=$(pinned_version "$module" k8s.io/kubernetes)
  apiserver_version=$(pinned_version "$here" k8s.io/kubernetes)
  [[ -n $version ]]
  if [[ $version != "$apiserver_version" ]]; then
    echo "e2e tools: $module/go.mod pins k8s.io/kubernetes $version, but $here/go.mod pins" \
      "$apiserver_version: the controllers must be the API server's release" >&2
    false
  fi
  major=${version#v}
  major=${major%%.*}
  minor=${version#v*.}
  minor=${minor%%.*}
  stamp="-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=$major"
  stamp="$stamp -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
  for binary in kube-controller-manager kube-scheduler; do
    build "$binary" "$module" "$cache_root/k8s-controllers/$version" "k8s.io/kubernetes/cmd/$binary" \
      "--version" "$stamp"
  done
}

build_kwok() {
  local module="$tools_root/kwok" version
  step "read the pinned kwok version"
  version=$(pinned_version "$module" sigs.k8s.io/kwok)
  [[ -n $version ]]
  build kwok "$module" "$cache_root/kwok/$version" sigs.k8s.io/kwok/cmd/kwok "--version" \
    "-X sigs.k8s.io/kwok/pkg/consts.Version=${version#v}"
}

# The LWS controller manager, and beside it what installing it needs from the same release: the
# LeaderWorkerSet CRD and the webhook manifests (paths and rules the harness registers by URL).
build_lws() {
  local module="$tools_root/lws" version dir source
  step "read the pinned LeaderWorkerSet version"
  version=$(pinned_version "$module" sigs.k8s.io/lws)
  [[ -n $version ]]
  dir="$cache_root/lws/$version"
  after_build="copy the LeaderWorkerSet CRD and webhook manifests into $dir"
  after_build_command=(copy_lws_manifests "$module" "$dir")
  build lws-manager "$module" "$dir" sigs.k8s.io/lws/cmd "--version" \
    "-X sigs.k8s.io/lws/pkg/version.GitVersion=$version"
  after_build=""
}

# Every CRD of the release: the manager also runs a DisaggregatedSet controller, which stops the
# manager when its kind is not served.
copy_lws_manifests() { # <module dir> <dir>
  local source
  source=$(cd "$1" && go list -m -f '{{.Dir}}' sigs.k8s.io/lws)
  rm -rf "$2/crds"
  mkdir -p "$2/crds"
  cp "$source"/config/crd/bases/*.yaml "$2/crds/"
  cp "$source/config/webhook/manifests.yaml" "$2/webhooks.yaml"
  chmod 0644 "$2"/crds/*.yaml "$2/webhooks.yaml" # the module cache's files are read-only
}

tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(helm promtool)
for tool in "${tools[@]}"; do
  case $tool in
  helm) build_helm ;;
  promtool) build_promtool ;;
  kube-controllers) build_kube_controllers ;;
  kwok) build_kwok ;;
  lws) build_lws ;;
  *)
    echo "e2e tools: unknown tool '$tool' (helm, promtool, kube-controllers, kwok, lws)" >&2
    exit 2
    ;;
  esac
done
