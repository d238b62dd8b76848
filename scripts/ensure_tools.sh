#!/usr/bin/env bash
# Sourced by scripts/test.sh and .ci/run: makes sure Deno and the Debian awscli package are
# present, installing them on a fresh machine (Deno through scripts/ensure_deno.sh).

source scripts/ensure_deno.sh

if [ ! -x /usr/bin/aws ]; then
  echo "Installing the Debian awscli package"
  SUDO=""
  if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq awscli >/dev/null
fi

# Further prerequisites (browsers, message brokers, directory servers, ...), one script each;
# every script installs only what is missing, so a second run costs nothing.
for installer in scripts/install/*.sh; do
  [ -e "$installer" ] || continue
  # shellcheck source=/dev/null
  source "$installer"
done
