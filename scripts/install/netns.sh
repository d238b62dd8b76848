#!/usr/bin/env bash
# iproute2 (`ip netns`, veth, bridges) for tests/integration/cluster_partition_test.ts, which puts
# each cluster node in a network namespace of its own and cuts links between them. Sourced by
# scripts/ensure_tools.sh; installs only when `ip` is missing.
if ! command -v ip >/dev/null 2>&1 && [ ! -x /usr/sbin/ip ] && [ ! -x /sbin/ip ]; then
  # shellcheck source=/dev/null
  source "$(dirname "${BASH_SOURCE[0]}")/../debian.sh"
  debian_install iproute2 || return
fi
