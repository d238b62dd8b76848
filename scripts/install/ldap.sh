#!/usr/bin/env bash
# OpenLDAP's server and tools for the LDAP sign-in tests (tests/integration/ldap_*): Debian slapd
# and ldap-utils. Sourced by scripts/ensure_tools.sh; installs only what is missing. The tests
# start their own slapd on a free port with a generated configuration in a temp directory, so the
# default instance is kept from starting (policy-rc.d) and stopped if it started anyway.

ldap_missing=""
if [ ! -x /usr/sbin/slapd ] || [ ! -x /usr/sbin/slapadd ]; then ldap_missing="$ldap_missing slapd"; fi
if ! command -v ldapsearch >/dev/null 2>&1; then ldap_missing="$ldap_missing ldap-utils"; fi

if [ -n "$ldap_missing" ]; then
  echo "Installing Debian packages:$ldap_missing"
  ldap_sudo=""
  if [ "$(id -u)" != "0" ]; then ldap_sudo="sudo"; fi
  ldap_policy_added=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $ldap_sudo tee /usr/sbin/policy-rc.d >/dev/null
    $ldap_sudo chmod 755 /usr/sbin/policy-rc.d
    ldap_policy_added=1
  fi
  ldap_status=0
  # Preseeded so the package asks nothing; the default database it creates is never used.
  # shellcheck disable=SC2086
  { echo "slapd slapd/no_configuration boolean true" | $ldap_sudo debconf-set-selections &&
    $ldap_sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $ldap_sudo apt-get install -y -qq --no-install-recommends \
      $ldap_missing >/dev/null; } || ldap_status=$?
  if [ -n "$ldap_policy_added" ]; then $ldap_sudo rm -f /usr/sbin/policy-rc.d; fi
  if [ "$ldap_status" != 0 ]; then
    echo "Installing$ldap_missing failed" >&2
    return "$ldap_status"
  fi
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    $ldap_sudo systemctl disable --now slapd >/dev/null 2>&1 || true
  elif [ -x /etc/init.d/slapd ]; then
    $ldap_sudo /etc/init.d/slapd stop >/dev/null 2>&1 || true
  fi
fi
unset ldap_missing ldap_sudo ldap_policy_added ldap_status
