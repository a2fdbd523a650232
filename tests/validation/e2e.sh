# trainsim validate, end-to-end groups without simulating: every row of
# the 406 is either expressible or listed with its reasons (--unexpressed),
# the JSON carries the same, and the threshold rules for groups of rows
# ("cases" minimum, cases without limits) fail --check as they should.
set -u
D="$SRC/validation/data"
T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# the groups of data/end-to-end/ (e2e-h100-steps and e2e-h200-steps read this
# project's own h100-micro/ and h200-micro/steps.csv through the same
# pipeline: e2e_h100_steps.sh, e2e_h200_steps.sh)
G=$("$TRAINSIM" validate --list | awk '/^e2e-/ && $1 != "e2e-h100-steps" && $1 != "e2e-h200-steps" {print $1}' | paste -sd, -)
[ "$(echo "$G" | tr , '\n' | wc -l)" -eq 9 ] || fail "expected 9 e2e groups, got: $G"
"$TRAINSIM" validate --list | grep -q '^e2e-h100-steps ' || fail "e2e-h100-steps not listed"
"$TRAINSIM" validate --list | grep -q '^e2e-h200-steps ' || fail "e2e-h200-steps not listed"

"$TRAINSIM" validate --group "$G" --data "$D" --unexpressed > "$T/u.txt" || fail "--unexpressed run"
"$TRAINSIM" validate --group "$G" --data "$D" --unexpressed > "$T/u2.txt" || fail "second --unexpressed run"
cmp -s "$T/u.txt" "$T/u2.txt" || fail "two --unexpressed runs differ"
# rows in the data add up to the 406 of the data set, each listed or expressible
awk '/rows in the data/ {d += $1; e += $6; n += $8} END {print d, e, n}' "$T/u.txt" > "$T/counts"
read -r inall expr notexpr < "$T/counts"
[ "$inall" -eq 406 ] || fail "rows in the data: $inall, expected 406"
[ $((expr + notexpr)) -eq 406 ] || fail "expressible $expr + not $notexpr != 406"
listed=$(grep -cE '^  [a-z0-9]+-[0-9]{3} ' "$T/u.txt")
[ "$listed" -eq "$notexpr" ] || fail "$listed rows listed, $notexpr not expressible"
# reasons name what is missing (those the data cause; the ones a build
# causes change as features land: each listed row has one)
grep -q 'micro_batch_size not stated' "$T/u.txt" || fail "no missing-column reason"
grep -q 'upper bound' "$T/u.txt" || fail "OPT's bound not flagged"
grep -E '^  bloom-' "$T/u.txt" && fail "a BLOOM row is not expressible (stage_split, grad_collective)"
grep -E '^  [a-z0-9]+-[0-9]{3} ' "$T/u.txt" | awk 'NF < 4 {print; bad = 1} END {exit bad}' || fail "a row without a reason"
# the fallbacks: FSDP FULL_SHARD is zero=3 where fsdp= is unknown, attn=unfused is left out
grep -E '^  mosaic-' "$T/u.txt" | grep -q 'fsdp=full' && fail "fsdp=full reported although zero=3 expresses it"
grep -E '^  dlperf-' "$T/u.txt" && fail "a DLPerf row is not expressible"

# JSON: rows and not_simulated per group
# (e2e-large: none of its rows expressible; e2e-bloom, all expressible since
# stage_split, simulates and is checked in e2e_megatron_heavy.sh)
"$TRAINSIM" validate --group e2e-large --data "$D" --json > "$T/a.json" || fail "json run"
if command -v python3 >/dev/null; then
  python3 - "$T/a.json" <<'PY' || fail "JSON content"
import json, sys
d = json.load(open(sys.argv[1]))
g = {x["name"]: x for x in d["groups"]}
b = g["e2e-large"]
assert b["rows"] == {"in_data": 4, "expressible": b["rows"]["expressible"], "simulated": len(b["cases"])}, b["rows"]
assert len(b.get("not_simulated", [])) == 4 - b["rows"]["expressible"]
for x in b.get("not_simulated", []):
    assert x["row"].startswith("large-") and x["reason"] and x["kind"], x
PY
fi

# --check with groups of rows: a "cases" minimum the group misses fails, as
# does a group with cases and no limit; a group of 0 expected cases passes
printf '{"groups": {"e2e-large": {"cases": 0}}}\n' > "$T/t0.json"
"$TRAINSIM" validate --group e2e-large --data "$D" --check --thresholds "$T/t0.json" > /dev/null 2> "$T/err" \
  || fail "cases 0 with no expressible row: $(cat "$T/err")"
printf '{"groups": {"e2e-large": {"cases": 1}}}\n' > "$T/t1.json"
"$TRAINSIM" validate --group e2e-large --data "$D" --check --thresholds "$T/t1.json" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 1 ] && grep -q 'e2e-large produced 0 cases, thresholds.json expects at least 1' "$T/err" \
  || fail "cases minimum: exit $rc $(cat "$T/err")"
printf '{"groups": {"e2e-large": {"mape": 1}}}\n' > "$T/t2.json"
"$TRAINSIM" validate --group e2e-large --data "$D" --check --thresholds "$T/t2.json" > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 1 ] && grep -q 'group e2e-large produced no cases' "$T/err" || fail "no cases: exit $rc $(cat "$T/err")"

# a refused row and a row the memory model refuses but that ran: the first
# is listed with the refusal, the second simulated with a note
mkdir -p "$T/craft/end-to-end"
python3 - "$D/end-to-end/oneflow_dlperf_megatron_v100.csv" "$T/craft/end-to-end/oneflow_dlperf_megatron_v100.csv" <<'PY' || fail "crafting rows"
import csv, sys
r = list(csv.DictReader(open(sys.argv[1])))
a = dict(r[5]); a.update(row_id="craft-001", tp="3")                       # tp=3 divides no head count
b = dict(r[0]); b.update(row_id="craft-002", num_layers="2", hidden_size="8192", num_heads="64",
                         num_kv_heads="64", ffn_hidden_size="32768")          # 1.6 B parameters on a 16 GB V100
w = csv.DictWriter(open(sys.argv[2], "w"), fieldnames=list(r[0].keys())); w.writeheader(); w.writerow(a); w.writerow(b)
PY
"$TRAINSIM" validate --group e2e-dlperf-v100 --data "$T/craft" --unexpressed > "$T/c.txt" || fail "crafted --unexpressed"
grep -q '^  craft-001 .*tp\*pp\*dp = 3\*1\*1 = 3 GPUs' "$T/c.txt" || fail "refused row: $(cat "$T/c.txt")"
grep -q 'craft-002' "$T/c.txt" && fail "the memory-refused row is listed as inexpressible"
"$TRAINSIM" validate --group e2e-dlperf-v100 --data "$T/craft" > "$T/c2.txt" 2>&1
grep -q '^  craft-002 .*full (run: .*memory model: [0-9.]* GB > 16 GB' "$T/c2.txt" || fail "memory note: $(cat "$T/c2.txt")"

# --emit: a row written as files that `trainsim run` takes gives validate's own figure
mkdir -p "$T/emit"
"$TRAINSIM" validate --group e2e-commodity --rows rtx4090-006 --data "$D" --fidelity full --json --emit "$T/emit" \
  > "$T/e.json" || fail "--emit run"
for f in cluster.json model.json sh; do [ -s "$T/emit/rtx4090-006.$f" ] || fail "--emit wrote no rtx4090-006.$f"; done
cmd=$(grep '^trainsim run ' "$T/emit/rtx4090-006.sh") || fail "no run command in rtx4090-006.sh"
(cd "$T/emit" && eval "\"\$TRAINSIM\" ${cmd#trainsim } --json") > "$T/r.json" || fail "the emitted command: $cmd"
if command -v python3 >/dev/null; then
  python3 - "$T/e.json" "$T/r.json" <<'PY' || fail "emitted run differs from validate"
import json, sys
v = json.load(open(sys.argv[1]))["groups"][0]["cases"]
r = json.load(open(sys.argv[2]))
assert len(v) == 1, v
t = r["iteration_time_s"]
assert abs(t / v[0]["simulated"] - 1) < 1e-9, (t, v[0]["simulated"])
PY
fi
"$TRAINSIM" validate --group e2e-commodity --rows rtx4090-006 --data "$D" --unexpressed --emit "$T/none/x" \
  > /dev/null 2> "$T/err" && fail "--emit into a missing folder succeeded"
grep -q 'none/x/rtx4090-006.cluster.json: cannot write' "$T/err" || fail "--emit error: $(cat "$T/err")"

# bad inputs
"$TRAINSIM" validate --group e2e-large --fidelity warp > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 2 ] && grep -q 'fidelity: expected auto, full or fast, got "warp"' "$T/err" || fail "bad --fidelity"
"$TRAINSIM" validate --group e2e-large --unexpressed --json > /dev/null 2> "$T/err"; rc=$?
[ $rc -eq 2 ] || fail "--unexpressed with --json: exit $rc"
mkdir -p "$T/bad/end-to-end"
head -1 "$D/end-to-end/large_public_runs.csv" | sed 's/micro_batch_size/mbs/' > "$T/bad/end-to-end/large_public_runs.csv"
"$TRAINSIM" validate --group e2e-large --data "$T/bad" > /dev/null 2> "$T/err"; rc=$?
[ $rc -ne 0 ] && grep -q 'no column "micro_batch_size"' "$T/err" || fail "missing column: $(cat "$T/err")"
echo "ok"
