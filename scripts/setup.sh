#!/usr/bin/env bash
# Installs what gcsim needs from Debian's packages (only what is missing) and
# builds it into build/. Idempotent: a second run installs nothing and only
# rebuilds what changed. Usage: scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config git
  libsimgrid-dev libeigen3-dev nlohmann-json3-dev libfmt-dev doctest-dev libcli11-dev
  libbenchmark-dev
  python3-numpy python3-torch python3-torchvision python3-matplotlib python3-sklearn
  libopenblas0-pthread dataset-fashion-mnist iproute2
  clang-format python3-pyflakes
)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$package")
done

if ((${#missing[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "gcsim needs these Debian packages; run as root:" >&2
    echo "  sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
# Configuring every time is cheap and picks up folders added since last time.
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
if ! cmake --build build -j "$jobs" >build/build.log 2>&1; then
  grep -E 'error|Error' build/build.log | head -40 >&2
  echo "setup: build failed; full log in build/build.log" >&2
  exit 1
fi
