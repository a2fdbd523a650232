# search_vs_run.bash — sourced by the search tests (plan_galvatron.sh,
# plan_search.sh); not a test itself.  It moves into a temporary directory
# (removed at exit), writes g4.json (gpt-1024 cut to 4 layers) and defines
# fail MESSAGE and
#   check PLATFORM-ARGS... -- MODEL SEARCH-ARGS...
# which runs `trainsim plan --search ... --json` into s.json and every plan it
# prints that fits (only the best with ONLY_BEST=1) through `trainsim run`:
# iteration time and peak memory within 3 % of run's, run's peak inside the
# search's budget.
: "${TRAINSIM:?path of the trainsim binary}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
fail() { echo "FAIL: $*"; exit 1; }
cat > g4.json <<'JSON'
{"name": "gpt-1024-4", "layers": 4, "hidden": 1024, "heads": 16, "ffn": 4096, "seq": 1024, "vocab": 50257}
JSON

check() {
  local plat=() model
  while [ "$1" != -- ]; do plat+=("$1"); shift; done
  shift; model=$1; shift
  "$TRAINSIM" plan "${plat[@]}" --model "$model" --json "$@" > s.json || fail "$*: $(cat s.json)"
  local budget sel n=0
  budget=$(jq .memory_budget_bytes s.json)
  sel='.plans[] | select(.ok)'
  [ "${ONLY_BEST:-0}" = 1 ] && sel='.plans[] | select(.best)'
  while read -r s est peak; do
    "$TRAINSIM" run "${plat[@]}" --model "$model" --strategy "$s" --json > run.json || fail "run $s"
    t=$(jq .iteration_time_s run.json); p=$(jq .peak_memory_bytes run.json)
    awk -v e="$est" -v t="$t" -v p="$peak" -v q="$p" -v b="$budget" 'BEGIN {
          de = e / t - 1; dm = p / q - 1; if (de < 0) de = -de; if (dm < 0) dm = -dm
          exit !(de <= 0.03 && dm <= 0.03 && q <= b) }' \
      || fail "$s: search $est s $peak B, run $t s $p B (budget $budget)"
    echo "  $s: search $est s, run $t s; peak $peak B, run $p B"
    n=$((n + 1))
  done < <(jq -r "$sel | \"\\(.strategy) \\(.estimated_s) \\(.peak_memory_bytes)\"" s.json)
  [ "$n" -gt 0 ] || fail "no plan: $(cat s.json)"
}
