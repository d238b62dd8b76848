#!/usr/bin/env bash
# systemd-analyze, for the test that verifies scripts/store.service (tests/integration/
# install_test.ts). Sourced by scripts/ensure_tools.sh; installs Debian's systemd package only
# when the program is missing. Verifying a unit file needs no running systemd.

if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "Installing the Debian systemd package (systemd-analyze)"
  systemd_analyze_sudo=""
  if [ "$(id -u)" != "0" ]; then systemd_analyze_sudo="sudo"; fi
  $systemd_analyze_sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $systemd_analyze_sudo apt-get install -y -qq \
    --no-install-recommends systemd >/dev/null
  unset systemd_analyze_sudo
fi
