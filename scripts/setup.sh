#!/usr/bin/env bash
# Installs what building Jobdeck needs, skipping whatever is already there:
# the wasm32 target, trunk, wasm-bindgen-cli at the exact version in
# Cargo.lock, wasm-split-cli, wasm-opt and terser. With --browser it also
# installs Chromium and chromedriver for the tests; with --lep the Python virtual
# environment tests/.venv with the real `lep` CLI (leptonai) at the versions
# pinned in tests/lep-requirements.txt, for tests/lep_cli.rs; with --tao the
# virtual environment tests/.tao-venv with NVIDIA's TAO SDK and the leptonai
# it needs (tests/tao-requirements.txt), for tests/tao_sdk.rs; with --fuzz
# tests/.fuzz-venv with Schemathesis (tests/fuzz-requirements.txt), for
# scripts/fuzz.sh; with --containers podman with runc, busybox-static (the
# test image's applets), Debian's docker-registry and htpasswd, for
# tests/containers.rs; with --slurm a one-node Slurm cluster running on this
# machine (scripts/slurm-up.sh), for tests/slurm.rs; with --oidc npm's
# oidc-provider in tests/oidc/node_modules (tests/oidc/package-lock.json), the
# real OpenID Connect provider of tests/sso.rs; with --smtp Python's aiosmtpd
# in tests/.smtp-venv, the SMTP server of the email notification tests. Versions are
# pinned so no build step ever downloads a tool of its own.
set -euo pipefail
cd "$(dirname "$0")/.."

TRUNK_VERSION="0.21.14"
BINARYEN_VERSION="132.0.0"
TERSER_VERSION="5.51.4"
WASM_SPLIT_VERSION="0.2.4"
WASM_BINDGEN_VERSION="$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)"

with_browser=false
with_lep=false
with_tao=false
with_fuzz=false
with_containers=false
with_slurm=false
with_oidc=false
with_smtp=false
for arg in "$@"; do
  case "$arg" in
    --browser) with_browser=true ;;
    --lep) with_lep=true ;;
    --tao) with_tao=true ;;
    --fuzz) with_fuzz=true ;;
    --containers) with_containers=true ;;
    --slurm) with_slurm=true ;;
    --oidc) with_oidc=true ;;
    --smtp) with_smtp=true ;;
    *) echo "usage: scripts/setup.sh [--browser] [--lep] [--tao] [--fuzz] [--containers] [--slurm] [--oidc] [--smtp]" >&2; exit 2 ;;
  esac
done

say() { printf '\033[1m==> %s\033[0m\n' "$*"; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
export PATH="$HOME/.cargo/bin:$PATH"

# scripts/test.sh checks the formatting and lints.
for component in rustfmt clippy; do
  if ! rustup component list --installed | grep -q "^$component"; then
    say "adding the $component component"
    rustup component add "$component"
  fi
done

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi

if ! trunk --version 2>/dev/null | grep -q "trunk $TRUNK_VERSION"; then
  say "installing trunk $TRUNK_VERSION"
  cargo install trunk --version "$TRUNK_VERSION" --locked
fi

if ! wasm-bindgen --version 2>/dev/null | grep -q "wasm-bindgen $WASM_BINDGEN_VERSION"; then
  say "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (the version in Cargo.lock)"
  # --locked can fail when a locked dependency was yanked; the unlocked
  # build still gets the same wasm-bindgen version.
  cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION" --locked \
    || cargo install wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
fi

# wasm-split-cli has no --version; cargo's list of installed crates says.
if ! cargo install --list | grep -qx "wasm_split_cli_support v$WASM_SPLIT_VERSION:"; then
  say "installing wasm-split-cli $WASM_SPLIT_VERSION (cuts the console into per-page modules)"
  cargo install wasm_split_cli_support --version "$WASM_SPLIT_VERSION" --features build-binary --locked
fi

if ! wasm-opt --version 2>/dev/null | grep -q "version ${BINARYEN_VERSION%%.*}"; then
  if ! command -v npm >/dev/null; then
    # Debian's wasm-opt is too old for trunk; npm's binaryen package is not.
    say "installing Node.js and npm (for binaryen's wasm-opt)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  fi
  say "installing wasm-opt (binaryen $BINARYEN_VERSION from npm)"
  as_root npm install -g "binaryen@$BINARYEN_VERSION"
fi

# The console's JavaScript (wasm-bindgen's glue and the split loader, which
# scripts/split-console.sh writes after trunk) is minified with terser.
if ! terser --version 2>/dev/null | grep -qx "terser $TERSER_VERSION"; then
  if ! command -v npm >/dev/null; then
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  fi
  say "installing terser $TERSER_VERSION from npm (minifies the console's JavaScript)"
  as_root npm install -g "terser@$TERSER_VERSION"
fi

if $with_browser; then
  if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
    say "installing Chromium and chromedriver"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  fi
fi

if $with_containers; then
  missing=()
  for tool in podman:podman runc:runc /bin/busybox:busybox-static docker-registry:docker-registry htpasswd:apache2-utils; do
    command -v "${tool%%:*}" >/dev/null || missing+=("${tool##*:}")
  done
  if [ "${#missing[@]}" != 0 ]; then
    say "installing ${missing[*]} (container mode's tests)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  # crun fails on setrlimit in some VMs, and podman's default ulimits ask
  # for more than an unprivileged hard limit allows there: runc, and the
  # limits this machine has. Only written where the machine has no
  # containers.conf of its own.
  if [ ! -e /etc/containers/containers.conf ]; then
    say "writing /etc/containers/containers.conf (runc, this machine's ulimits)"
    nofile="$(ulimit -Hn)"
    nproc="$(ulimit -Hu)"
    [ "$nproc" = unlimited ] || [ "$nproc" -gt 32768 ] && nproc=32768
    printf '[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n\n[engine]\nruntime = "runc"\n' \
      "$nofile" "$nofile" "$nproc" "$nproc" | as_root tee /etc/containers/containers.conf >/dev/null
  fi
  # `--userns=auto` on a rootful podman takes its ranges from the user
  # `containers` (executor.local.user_namespace = "auto", docs/security.md).
  for ids in /etc/subuid /etc/subgid; do
    if ! grep -q '^containers:' "$ids" 2>/dev/null; then
      say "adding subordinate ids for podman's --userns=auto to $ids"
      echo "containers:2147483647:2147483648" | as_root tee -a "$ids" >/dev/null
    fi
  done
fi

if $with_slurm; then
  scripts/slurm-up.sh
fi

# A Python virtual environment `venv` filled from the pinned `requirements`
# (a marker file `check` in it says it is there). The stamp holds the
# requirements the venv was filled from, written only after pip succeeded, so
# an interrupted install or a changed pin is installed again and an
# up-to-date venv costs nothing.
python_venv() {
  local venv="$1" requirements="$2" check="$3" what="$4"
  local stamp="$venv/.installed-requirements"
  if [ -e "$venv/$check" ] && cmp -s "$requirements" "$stamp"; then
    return 0
  fi
  say "installing $what into $venv"
  if ! [ -x "$venv/bin/python" ] || ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    rm -rf "$venv"
    # Debian ships what a venv needs to get pip (ensurepip) in python3-venv;
    # without it `python3 -m venv` fails and leaves a venv without pip.
    if ! command -v python3 >/dev/null || ! python3 -m venv "$venv" >/dev/null 2>&1; then
      rm -rf "$venv"
      say "installing python3-venv"
      as_root apt-get update -qq
      as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3 python3-venv >/dev/null
      python3 -m venv "$venv"
    fi
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$requirements"
  cp "$requirements" "$stamp"
}

if $with_lep; then
  python_venv tests/.venv tests/lep-requirements.txt bin/lep \
    "the lep CLI ($(grep -m1 '^leptonai==' tests/lep-requirements.txt))"
fi

if $with_tao; then
  python_venv tests/.tao-venv tests/tao-requirements.txt bin/python \
    "the TAO SDK ($(grep -m1 '^nvidia-tao-sdk==' tests/tao-requirements.txt), $(grep -m1 '^leptonai==' tests/tao-requirements.txt))"
fi

if $with_fuzz; then
  python_venv tests/.fuzz-venv tests/fuzz-requirements.txt bin/schemathesis \
    "Schemathesis ($(grep -m1 '^schemathesis==' tests/fuzz-requirements.txt))"
fi

if $with_smtp; then
  python_venv tests/.smtp-venv tests/smtp-requirements.txt bin/aiosmtpd \
    "the SMTP server of the email tests ($(grep -m1 '^aiosmtpd==' tests/smtp-requirements.txt))"
fi

if $with_oidc; then
  if ! command -v npm >/dev/null; then
    say "installing Node.js and npm (for the tests' OpenID Connect provider)"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
  fi
  wanted="$(python3 -c 'import json; print(json.load(open("tests/oidc/package-lock.json"))["packages"]["node_modules/oidc-provider"]["version"])')"
  have="$(python3 -c 'import json; print(json.load(open("tests/oidc/node_modules/oidc-provider/package.json"))["version"])' 2>/dev/null || true)"
  if [ "$have" != "$wanted" ]; then
    say "installing oidc-provider $wanted into tests/oidc (the tests' OpenID Connect provider)"
    (cd tests/oidc && npm ci --no-audit --no-fund --loglevel=error)
  fi
fi
