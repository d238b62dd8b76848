#!/usr/bin/env bash
# Installs the server as a systemd service:
#   /opt/store/                  the program (main.ts, src/, deno.json, deno.server.lock, README)
#   /opt/store/bin/deno          the Deno it runs on (a copy of the one found, see --deno)
#   /usr/lib/sysusers.d/store.conf and the system user `store`
#   /etc/systemd/system/store.service   (scripts/store.service)
#   /etc/store/store.env         settings template (kept when it exists: upgrades keep settings)
#   /var/cache/store/deno        the server's packages, fetched now so the first start is offline
# Data lives in /var/lib/store (created by systemd, StateDirectory=).
#
# Usage: sudo scripts/install.sh [--deno PATH] [--no-fetch]
#   DESTDIR=/some/dir scripts/install.sh   stages everything below that directory instead (no root
#                                          needed; no user is created on the machine, no systemctl)
# Run it again to upgrade: the program is replaced, settings and data stay; then
# `systemctl restart store`.
set -euo pipefail
cd "$(dirname "$0")/.."

DESTDIR="${DESTDIR:-}"
deno=""
fetch=1
while [ $# -gt 0 ]; do
  case "$1" in
    --deno) deno="$2"; shift 2 ;;
    --no-fetch) fetch=0; shift ;;
    *) echo "install.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

if [ -z "$DESTDIR" ] && [ "$(id -u)" != 0 ]; then
  echo "install.sh: run as root (or set DESTDIR to stage the files elsewhere)" >&2
  exit 2
fi
if [ -z "$deno" ]; then
  source scripts/ensure_deno.sh
  deno="$(command -v deno)"
fi
deno="$(readlink -f "$deno")"
if ! "$deno" --version >/dev/null 2>&1; then
  echo "install.sh: $deno is not a working Deno executable (use --deno PATH)" >&2
  exit 2
fi

app="$DESTDIR/opt/store"
echo "Installing the program into $app"
install -d -m 0755 "$app" "$app/bin"
rm -rf "$app/src.new"
cp -R src "$app/src.new"
find "$app/src.new" \( -name '*_test.ts' -o -name testdata \) -prune -exec rm -rf {} +
rm -rf "$app/src"
mv "$app/src.new" "$app/src"
install -m 0644 main.ts deno.json deno.server.lock README.md "$app/"
install -m 0755 "$deno" "$app/bin/deno.new"
mv "$app/bin/deno.new" "$app/bin/deno"

echo "Installing the unit, the system user and the settings template"
install -d -m 0755 "$DESTDIR/etc/systemd/system" "$DESTDIR/usr/lib/sysusers.d"
install -m 0644 scripts/store.service "$DESTDIR/etc/systemd/system/store.service"
printf 'u store - "store object storage server" /var/lib/store /usr/sbin/nologin\n' \
  >"$DESTDIR/usr/lib/sysusers.d/store.conf"
if [ -n "$DESTDIR" ]; then
  install -d -m 0755 "$DESTDIR/etc"
  systemd-sysusers --root="$DESTDIR" "$DESTDIR/usr/lib/sysusers.d/store.conf"
elif command -v systemd-sysusers >/dev/null 2>&1; then
  systemd-sysusers /usr/lib/sysusers.d/store.conf
elif ! id store >/dev/null 2>&1; then
  useradd --system --home-dir /var/lib/store --no-create-home --shell /usr/sbin/nologin store
fi

env_file="$DESTDIR/etc/store/store.env"
install -d -m 0755 "$DESTDIR/etc/store"
if [ ! -e "$env_file" ]; then
  install -m 0640 scripts/store.env "$env_file"
  if [ -z "$DESTDIR" ]; then chgrp store "$env_file"; fi
else
  echo "Keeping the existing $env_file"
fi

cache="$DESTDIR/var/cache/store/deno"
if [ "$fetch" = 1 ]; then
  echo "Fetching the server's packages into $cache"
  install -d -m 0700 "$cache"
  (cd "$app" && DENO_DIR="$cache" "$app/bin/deno" cache --lock=deno.server.lock --frozen main.ts)
  if [ -z "$DESTDIR" ]; then chown -R store:store "$DESTDIR/var/cache/store"; fi
fi

if [ -z "$DESTDIR" ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload
  echo "Installed. Edit /etc/store/store.env, then: systemctl enable --now store"
else
  echo "Installed below ${DESTDIR:-/}."
fi
