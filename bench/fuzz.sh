#!/usr/bin/env bash
# fuzz.sh — builds the libFuzzer targets (tests/fuzz/, one per reader) with
# clang, AddressSanitizer and UndefinedBehaviorSanitizer in build-fuzz/, and
# runs each on a corpus seeded with the repository's own files (clusters,
# models, the catalogue, the example platform, tests/fuzz/corpus/).  A crash,
# a sanitizer report, a broken property, a leak or a 10 s input fails the
# run; the input is kept in build-fuzz/artifacts/.
#
#   bash bench/fuzz.sh                    the long run: 10^6 executions per target (docs/fuzzing.md)
#   bash bench/fuzz.sh --seconds 5 --seed 1   what test.sh (CI) runs: a fixed seed, so
#                                         that CI explores the same inputs every time
#   bash bench/fuzz.sh --runs N TARGET..  some targets only (schedule cluster model strategy kineto xml cache catalog jobs import et)
set -euo pipefail
cd "$(dirname "$0")/.."
limit=(-runs=1000000)
seed=()
targets=()
while [ $# -gt 0 ]; do
    case "$1" in
        --seconds) limit=(-max_total_time="$2"); shift 2 ;;
        --runs) limit=(-runs="$2"); shift 2 ;;
        --seed) seed=(-seed="$2"); shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) targets+=("$1"); shift ;;
    esac
done
[ ${#targets[@]} -gt 0 ] || targets=(schedule cluster model strategy kineto xml cache catalog jobs import et)
command -v clang > /dev/null || { echo "fuzz.sh: clang is not installed (bash setup.sh --fuzz installs it)" >&2; exit 1; }

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DTRAINSIM_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build build-fuzz -j"$jobs" > build-fuzz/build.log 2>&1 || { tail -30 build-fuzz/build.log; exit 1; }

# seeds, and the largest input tried (a little above the largest seed: larger
# inputs only slow the search)
seeds() {
    case "$1" in
        schedule) echo 16384 tests/fuzz/corpus/schedule ;;
        cluster) echo 4096 platforms/clusters tests/fuzz/corpus/cluster ;;
        model) echo 1024 workloads/models tests/workloads/hf ;;
        strategy) echo 256 tests/fuzz/corpus/strategy ;;
        kineto) echo 8192 tests/fuzz/corpus/kineto ;;
        xml) echo 16384 platforms/examples tests/fuzz/corpus/xml ;;
        cache) echo 4096 tests/fuzz/corpus/cache ;;
        catalog) echo 16384 platforms/catalog/gpus.json ;;
        jobs) echo 1024 tests/fuzz/corpus/jobs ;;
        import) echo 8192 tests/fuzz/corpus/kineto ;;
        et) echo 8192 tests/fuzz/corpus/et ;;
        *) echo "fuzz.sh: unknown target $1" >&2; return 1 ;;
    esac
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p build-fuzz/artifacts
failed=0
printf '%-9s %12s %9s %7s %8s %s\n' target executions exec/s corpus "RSS MB" result
for t in "${targets[@]}"; do
    mkdir -p "$work/$t"
    read -r max_len sources <<< "$(seeds "$t")"
    for s in $sources; do # every file under s, named by its path (tests/workloads/hf has config.json twice)
        find "$s" -type f | while read -r f; do cp "$f" "$work/$t/$(echo "$f" | tr / _)"; done
    done
    rc=0
    (cd "$work" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        "$OLDPWD/build-fuzz/tests/fuzz/fuzz_$t" "${limit[@]}" ${seed[@]+"${seed[@]}"} -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 \
        -print_final_stats=1 -artifact_prefix="$OLDPWD/build-fuzz/artifacts/$t-" "$t") > "$work/$t.log" 2>&1 || rc=$?
    stat() { sed -n "s/^stat::$1: *//p" "$work/$t.log"; }
    result=ok
    [ "$rc" -eq 0 ] || { result="FAILED (exit $rc)"; failed=$((failed + 1)); }
    printf '%-9s %12s %9s %7s %8s %s\n' "$t" "$(stat number_of_executed_units)" "$(stat average_exec_per_sec)" \
        "$(ls "$work/$t" | wc -l)" "$(stat peak_rss_mb)" "$result"
    if [ "$rc" -ne 0 ]; then
        grep -E 'ERROR|SUMMARY|runtime error|Test unit written|#[0-9]+ 0x' "$work/$t.log" | head -30 | sed 's/^/    /'
    fi
done
[ "$failed" -eq 0 ] || { echo "fuzz.sh: $failed target(s) failed; inputs in build-fuzz/artifacts/" >&2; exit 1; }
