#!/usr/bin/env bash
# Message brokers and databases for the notification-target tests (tests/services/): RabbitMQ,
# NATS, Mosquitto, Redis, PostgreSQL from Debian. Sourced by scripts/ensure_tools.sh; installs only
# what is missing. The tests start their own instances on free ports with temp directories, so no
# default instance may stay running: the install is kept from starting them, and any that is
# running afterwards is stopped and disabled.

brokers_missing=""
# Each package with the server program it provides.
for brokers_pair in rabbitmq-server:/usr/lib/rabbitmq/bin/rabbitmq-server \
  nats-server:/usr/sbin/nats-server mosquitto:/usr/sbin/mosquitto \
  redis-server:/usr/bin/redis-server postgresql:/usr/lib/postgresql/*/bin/postgres; do
  brokers_pkg="${brokers_pair%%:*}"
  brokers_probe="${brokers_pair#*:}"
  if ! compgen -G "$brokers_probe" >/dev/null; then
    brokers_missing="$brokers_missing $brokers_pkg"
  fi
done

if [ -n "$brokers_missing" ]; then
  echo "Installing Debian packages:$brokers_missing"
  brokers_sudo=""
  if [ "$(id -u)" != "0" ]; then brokers_sudo="sudo"; fi
  # policy-rc.d answering 101 keeps maintainer scripts from starting the default instances.
  brokers_policy_added=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $brokers_sudo tee /usr/sbin/policy-rc.d >/dev/null
    $brokers_sudo chmod 755 /usr/sbin/policy-rc.d
    brokers_policy_added=1
  fi
  brokers_status=0
  # shellcheck disable=SC2086
  { $brokers_sudo apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive $brokers_sudo apt-get install -y -qq --no-install-recommends \
      $brokers_missing >/dev/null; } || brokers_status=$?
  if [ -n "$brokers_policy_added" ]; then $brokers_sudo rm -f /usr/sbin/policy-rc.d; fi
  if [ "$brokers_status" != 0 ]; then
    echo "Installing$brokers_missing failed" >&2
    return "$brokers_status"
  fi
  # Whatever started anyway (a machine without policy-rc.d support) is stopped and disabled.
  for brokers_unit in rabbitmq-server nats-server mosquitto redis-server postgresql epmd.socket \
    epmd; do
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
      $brokers_sudo systemctl disable --now "$brokers_unit" >/dev/null 2>&1 || true
    elif [ -x "/etc/init.d/$brokers_unit" ]; then
      $brokers_sudo "/etc/init.d/$brokers_unit" stop >/dev/null 2>&1 || true
    fi
  done
  # The Erlang port mapper on its default port outlives a broker; the tests start their own.
  if command -v epmd >/dev/null 2>&1; then ERL_EPMD_PORT=4369 epmd -kill >/dev/null 2>&1 || true; fi
fi
unset brokers_missing brokers_pair brokers_pkg brokers_probe brokers_sudo brokers_policy_added \
  brokers_unit brokers_status
