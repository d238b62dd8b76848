#!/usr/bin/env bash
# Helpers for the installers in scripts/install/ (sourced by each): Debian packages installed
# quietly, as root or through sudo, optionally without letting their maintainer scripts start the
# services they ship (the tests start their own instances on free ports).

debian_sudo() {
  if [ "$(id -u)" = "0" ]; then "$@"; else sudo "$@"; fi
}

# debian_install [--no-services] PACKAGE...: apt-get update, then install without recommends.
# --no-services: policy-rc.d answers 101 while the packages install, so nothing is started.
debian_install() {
  local no_services="" policy_added="" status=0
  if [ "$1" = "--no-services" ]; then
    no_services=1
    shift
  fi
  echo "Installing Debian packages: $*"
  if [ -n "$no_services" ] && [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | debian_sudo tee /usr/sbin/policy-rc.d >/dev/null
    debian_sudo chmod 755 /usr/sbin/policy-rc.d
    policy_added=1
  fi
  { debian_sudo apt-get update -qq &&
    debian_sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
      --no-install-recommends "$@" >/dev/null; } || status=$?
  if [ -n "$policy_added" ]; then debian_sudo rm -f /usr/sbin/policy-rc.d; fi
  if [ "$status" != 0 ]; then echo "Installing $* failed" >&2; fi
  return "$status"
}

# debian_stop_services UNIT...: stops and disables what started anyway (no policy-rc.d support).
debian_stop_services() {
  local unit
  for unit in "$@"; do
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
      debian_sudo systemctl disable --now "$unit" >/dev/null 2>&1 || true
    elif [ -x "/etc/init.d/$unit" ]; then
      debian_sudo "/etc/init.d/$unit" stop >/dev/null 2>&1 || true
    fi
  done
}
