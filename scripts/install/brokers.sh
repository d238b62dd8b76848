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
  # shellcheck source=/dev/null
  source "$(dirname "${BASH_SOURCE[0]}")/../debian.sh"
  # shellcheck disable=SC2086
  debian_install --no-services $brokers_missing || return
  # Whatever started anyway (a machine without policy-rc.d support) is stopped and disabled.
  debian_stop_services rabbitmq-server nats-server mosquitto redis-server postgresql epmd.socket epmd
  # The Erlang port mapper on its default port outlives a broker; the tests start their own.
  if command -v epmd >/dev/null 2>&1; then ERL_EPMD_PORT=4369 epmd -kill >/dev/null 2>&1 || true; fi
fi
unset brokers_missing brokers_pair brokers_pkg brokers_probe
