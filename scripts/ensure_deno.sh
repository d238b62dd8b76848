#!/usr/bin/env bash
# Sourced by scripts/ensure_tools.sh and scripts/start.sh: makes sure Deno is on the PATH,
# installing it on a fresh machine from the npm registry into .tools/ (Node.js and npm needed).

DENO_VERSION=2.9.6

if ! command -v deno >/dev/null 2>&1 || ! deno --version | grep -q "^deno ${DENO_VERSION} "; then
  if [ ! -x .tools/node_modules/.bin/deno ]; then
    echo "Installing Deno ${DENO_VERSION} from the npm registry into .tools/"
    mkdir -p .tools
    npm install --prefix .tools --no-audit --no-fund --loglevel=error "deno@${DENO_VERSION}" >/dev/null
  fi
  export PATH="$PWD/.tools/node_modules/.bin:$PATH"
fi
