# MinIO's client `mc`, for the test of `mc watch` (tests/integration/mc_watch_test.ts): built
# from the Go module proxy into .tools/bin/mc (a few minutes, once) with the machine's Go, which
# must be 1.21 or newer (those fetch the toolchain mc's go.mod asks for by themselves).
MC_MODULE_VERSION="v0.0.0-20250313080218-cf909e1063a9"

if [ ! -x .tools/bin/mc ]; then
  mc_go="$(command -v go || true)"
  [ -n "$mc_go" ] || mc_go=/usr/local/go/bin/go
  mc_minor="$("$mc_go" env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
  if [ -z "$mc_minor" ] || [ "$mc_minor" -lt 21 ]; then
    echo "Building mc needs Go 1.21 or newer on the PATH (found: ${mc_minor:+go1.$mc_minor}${mc_minor:-none})" >&2
    return 1
  fi
  echo "Building mc ${MC_MODULE_VERSION} from the Go module proxy into .tools/bin (a few minutes)"
  mkdir -p .tools/bin
  GOFLAGS=-mod=mod GOBIN="$PWD/.tools/bin" GOTOOLCHAIN=auto \
    "$mc_go" install "github.com/minio/mc@${MC_MODULE_VERSION}" >/dev/null
  unset mc_go mc_minor
fi
