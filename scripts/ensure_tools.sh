#!/usr/bin/env bash
# Sourced by scripts/test.sh and .ci/run: makes sure Deno and the Debian awscli package are
# present, installing them on a fresh machine (Deno from the npm registry into .tools/).

DENO_VERSION=2.9.6

if ! command -v deno >/dev/null 2>&1 || ! deno --version | grep -q "^deno ${DENO_VERSION} "; then
  if [ ! -x .tools/node_modules/.bin/deno ]; then
    echo "Installing Deno ${DENO_VERSION} from the npm registry into .tools/"
    mkdir -p .tools
    npm install --prefix .tools --no-audit --no-fund --loglevel=error "deno@${DENO_VERSION}" >/dev/null
  fi
  export PATH="$PWD/.tools/node_modules/.bin:$PATH"
fi

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
