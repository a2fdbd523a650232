#!/usr/bin/env bash
# Installs what trainsim needs (Debian packages, as root) when it is missing,
# then builds it into build/ (and, with --sanitize, build-sanitize/ with
# AddressSanitizer + UndefinedBehaviorSanitizer).  --fuzz also installs clang
# and its libFuzzer runtime (bench/fuzz.sh builds and runs the targets).
set -euo pipefail
cd "$(dirname "$0")"

sanitize=0
packages=(build-essential cmake pkg-config libsimgrid-dev libcjson-dev libgsl-dev zlib1g-dev python3 time openmpi-bin libopenmpi-dev)
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=1 ;;
    --fuzz) packages+=(clang libclang-rt-dev) ;;
    *) echo "setup: unknown option $arg (--sanitize, --fuzz)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
if [ "$sanitize" = 1 ]; then
  cmake -S . -B build-sanitize -DCMAKE_BUILD_TYPE=Debug -DTRAINSIM_SANITIZE=ON >/dev/null
  cmake --build build-sanitize -j"$jobs"
fi
