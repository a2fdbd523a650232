#!/usr/bin/env bash
# Sets up, builds, and runs the whole test suite twice: on the optimised
# build, and on the AddressSanitizer + UndefinedBehaviorSanitizer build;
# then every reader's libFuzzer target for 5 s (tests/fuzz/).
set -euo pipefail
cd "$(dirname "$0")"
bash setup.sh --sanitize --fuzz
jobs=$(nproc 2>/dev/null || echo 2)
echo "== tests (optimised build)"
ctest --test-dir build --output-on-failure -j"$jobs"
echo "== tests (AddressSanitizer + UndefinedBehaviorSanitizer; tests labelled heavy run above only)"
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-sanitize --output-on-failure -j"$jobs" -LE heavy
echo "== fuzz targets (libFuzzer + AddressSanitizer + UBSan, 5 s each; the long run: bash bench/fuzz.sh)"
bash bench/fuzz.sh --seconds 5 --seed 1
