#!/usr/bin/env bash
# OpenSSL's libcrypto, which the server uses for the MD5 of uploads when the system has it
# (src/storage/md5.ts; node:crypto otherwise) and whose use src/storage/md5_test.ts checks. Sourced
# by scripts/ensure_tools.sh; installs the openssl package (which brings the library) only when no
# libcrypto is found.
if ! ldconfig -p 2>/dev/null | grep -qE 'libcrypto\.so\.(3|1\.1) '; then
  # shellcheck source=/dev/null
  source "$(dirname "${BASH_SOURCE[0]}")/../debian.sh"
  debian_install openssl || return
fi
