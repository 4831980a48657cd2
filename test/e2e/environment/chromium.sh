#!/usr/bin/env bash
# Makes sure Debian's Chromium is installed, for the status page's browser test
# (test/e2e/status-page.test.ts drives /usr/bin/chromium through playwright-core; nothing downloads
# a browser of its own). Idempotent: when chromium is already on PATH it only prints the version;
# otherwise it runs `apt-get update` once and installs the `chromium` package without its
# recommendations. Needs root (or sudo) only when it has to install. Every step is announced; a
# failure names the step that failed.
set -euo pipefail

current_step="start"
step() {
  current_step=$1
  echo "chromium: $1"
}
trap 'echo "chromium: FAILED at step: ${current_step}" >&2' ERR

step "look for an installed Chromium"
if ! command -v chromium >/dev/null 2>&1; then
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    step "find sudo (not root)"
    command -v sudo >/dev/null || { echo "chromium: not root and no sudo; install the 'chromium' package by hand" >&2; false; }
    sudo=(sudo)
  fi
  export DEBIAN_FRONTEND=noninteractive
  step "apt-get update"
  "${sudo[@]}" apt-get update -q
  step "apt-get install -y --no-install-recommends chromium"
  "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium
fi

step "check the installed version"
# Debian's launcher script prints a harmless shell warning on stderr on some machines.
version=$(chromium --version 2>/dev/null)
[[ -n $version ]] || { echo "chromium: 'chromium --version' printed nothing" >&2; false; }
echo "chromium: ready: $(command -v chromium): $version"
