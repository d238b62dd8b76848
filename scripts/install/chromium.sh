#!/usr/bin/env bash
# Sourced by scripts/ensure_tools.sh: Debian's chromium package, which the browser tests
# (tests/browser/) drive through puppeteer-core. Installs only when /usr/bin/chromium is missing.

if [ ! -x /usr/bin/chromium ]; then
  echo "Installing the Debian chromium package"
  CHROMIUM_SUDO=""
  if [ "$(id -u)" != "0" ]; then CHROMIUM_SUDO="sudo"; fi
  $CHROMIUM_SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive $CHROMIUM_SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq --no-install-recommends \
    chromium fonts-dejavu-core >/dev/null
fi
