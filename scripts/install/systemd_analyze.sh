#!/usr/bin/env bash
# systemd-analyze, for the test that verifies scripts/store.service (tests/integration/
# install_test.ts). Sourced by scripts/ensure_tools.sh; installs Debian's systemd package only
# when the program is missing. Verifying a unit file needs no running systemd.

if ! command -v systemd-analyze >/dev/null 2>&1; then
  # shellcheck source=/dev/null
  source "$(dirname "${BASH_SOURCE[0]}")/../debian.sh"
  debian_install systemd || return
fi
