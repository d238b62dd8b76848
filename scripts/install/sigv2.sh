# Debian's boto3 (python3-boto3): an old-signature (signature_version 's3') client that
# tests/integration/sigv2_test.ts drives as an oracle. Sourced by scripts/ensure_tools.sh.
if ! /usr/bin/python3 -c "import boto3" >/dev/null 2>&1; then
  echo "Installing the Debian python3-boto3 package"
  SUDO=""
  if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-boto3 >/dev/null
fi
