#!/usr/bin/env bash
# Installs Debian's Chromium for tests/report_html.rs when it is missing: the README's test
# command (`cargo test --workspace --release`) runs this from the browser tests, so a fresh
# machine needs no set-up step of its own. As root directly, otherwise through non-interactive
# sudo. Prints where the browser is; exits non-zero (and the browser tests then fail, naming
# this script) when it cannot install.
set -euo pipefail
for name in chromium chromium-browser; do
  if command -v "$name" >/dev/null 2>&1; then
    command -v "$name"
    exit 0
  fi
done
SUDO=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1 || ! sudo -n true 2>/dev/null; then
    echo "install-chromium: not root and no passwordless sudo; install Debian's chromium package by hand" >&2
    exit 1
  fi
  SUDO=(sudo -n)
fi
echo "install-chromium: installing Debian's chromium package (apt-get)" >&2
"${SUDO[@]}" apt-get update -qq >&2
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
command -v chromium
