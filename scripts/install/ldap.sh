#!/usr/bin/env bash
# OpenLDAP's server and tools for the LDAP sign-in tests (tests/integration/ldap_*): Debian slapd
# and ldap-utils. Sourced by scripts/ensure_tools.sh; installs only what is missing. The tests
# start their own slapd on a free port with a generated configuration in a temp directory, so the
# default instance is kept from starting (policy-rc.d) and stopped if it started anyway.

ldap_missing=""
if [ ! -x /usr/sbin/slapd ] || [ ! -x /usr/sbin/slapadd ]; then ldap_missing="$ldap_missing slapd"; fi
if ! command -v ldapsearch >/dev/null 2>&1; then ldap_missing="$ldap_missing ldap-utils"; fi

if [ -n "$ldap_missing" ]; then
  # shellcheck source=/dev/null
  source "$(dirname "${BASH_SOURCE[0]}")/../debian.sh"
  # Preseeded so the package asks nothing; the default database it creates is never used.
  echo "slapd slapd/no_configuration boolean true" | debian_sudo debconf-set-selections
  # shellcheck disable=SC2086
  debian_install --no-services $ldap_missing || return
  debian_stop_services slapd
fi
unset ldap_missing
