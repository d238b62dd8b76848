# MinIO's client `mc`, for the test of `mc watch` (tests/integration/mc_watch_test.ts): built
# from the Go module proxy into .tools/bin/mc. Installs Go from Debian when it is missing; Go
# fetches the newer toolchain mc's go.mod asks for through the same proxy.
MC_MODULE_VERSION="v0.0.0-20250313080218-cf909e1063a9"

if [ ! -x .tools/bin/mc ]; then
  if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
    echo "Installing the Debian golang-go package (to build mc)"
    MC_SUDO=""
    if [ "$(id -u)" != "0" ]; then MC_SUDO="sudo"; fi
    $MC_SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $MC_SUDO apt-get install -y -qq golang-go >/dev/null
  fi
  MC_GO="$(command -v go || echo /usr/local/go/bin/go)"
  echo "Building mc ${MC_MODULE_VERSION} from the Go module proxy into .tools/bin (a few minutes)"
  mkdir -p .tools/bin
  GOFLAGS=-mod=mod GOBIN="$PWD/.tools/bin" GOTOOLCHAIN=auto \
    "$MC_GO" install "github.com/minio/mc@${MC_MODULE_VERSION}" >/dev/null
fi
