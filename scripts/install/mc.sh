# MinIO's client `mc`, for the test of `mc watch` (tests/integration/mc_watch_test.ts): built
# from the Go module proxy into .tools/bin/mc (a few minutes, once). mc needs Go 1.23 or newer;
# when the machine's Go is missing or older than 1.21 (Debian 12 ships 1.19), the Go toolchain
# itself is fetched from the module proxy (module golang.org/toolchain) into .tools/go.
MC_MODULE_VERSION="v0.0.0-20250313080218-cf909e1063a9"
MC_GO_TOOLCHAIN="v0.0.1-go1.24.6"

mc_go_usable() {
  # Go 1.21 and newer fetch the toolchain mc's go.mod asks for by themselves (GOTOOLCHAIN=auto).
  local minor
  minor="$("$1" env GOVERSION 2>/dev/null | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
  [ -n "$minor" ] && [ "$minor" -ge 21 ]
}

if [ ! -x .tools/bin/mc ]; then
  MC_GO=""
  for candidate in "$(command -v go || true)" /usr/local/go/bin/go .tools/go/bin/go; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && mc_go_usable "$candidate"; then
      MC_GO="$candidate"
      break
    fi
  done
  if [ -z "$MC_GO" ]; then
    case "$(uname -m)" in
      x86_64) MC_ARCH=amd64 ;;
      aarch64 | arm64) MC_ARCH=arm64 ;;
      *) MC_ARCH="$(uname -m)" ;;
    esac
    MC_ZIP="$(mktemp)"
    echo "Fetching the Go toolchain ${MC_GO_TOOLCHAIN} from the Go module proxy (to build mc)"
    curl -fsSL -o "$MC_ZIP" \
      "https://proxy.golang.org/golang.org/toolchain/@v/${MC_GO_TOOLCHAIN}.linux-${MC_ARCH}.zip"
    rm -rf .tools/go .tools/go-unpack
    mkdir -p .tools/go-unpack
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
      "$MC_ZIP" .tools/go-unpack
    rm -f "$MC_ZIP"
    mv .tools/go-unpack/golang.org/toolchain@*/ .tools/go
    rm -rf .tools/go-unpack
    chmod +x .tools/go/bin/* .tools/go/pkg/tool/*/* 2>/dev/null || true
    MC_GO="$PWD/.tools/go/bin/go"
  fi
  echo "Building mc ${MC_MODULE_VERSION} from the Go module proxy into .tools/bin (a few minutes)"
  mkdir -p .tools/bin
  GOFLAGS=-mod=mod GOBIN="$PWD/.tools/bin" GOTOOLCHAIN=auto GOROOT="" \
    "$MC_GO" install "github.com/minio/mc@${MC_MODULE_VERSION}" >/dev/null
fi
