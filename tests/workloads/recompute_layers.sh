# recompute_layers.sh — Megatron's --recompute-method block
# --recompute-num-layers N as the strategy key recompute_layers: with
# recompute=full only the first N layers of each model chunk recompute.
# N = 0 runs as recompute=none and N = the layers of a stage as full, to the
# printed digit; between them the time grows and the activations shrink with
# N; the planner's fast fidelity agrees with run; what Megatron refuses is
# refused with the reason.
set -euo pipefail
: "${TRAINSIM:?path of the trainsim binary}"
source "$(dirname "$0")/../expect.bash"
P=(--platform azure-nd-a100-v4 --model gpt-1.3b)
S=tp=2,pp=2,dp=2,mb=2,gb=32,dtype=bf16,attn=flash # 24 layers: 12 a stage

field() { # the run's iteration seconds or rank 0's activations (GB)
    "$TRAINSIM" run "${P[@]}" --strategy "$1" > "$tmp/r.txt" 2>&1 || { cat "$tmp/r.txt" >&2; fail "run $1 failed"; }
    case $2 in
    time) sed -n 's/^iteration time *\([0-9.]*\) s$/\1/p' "$tmp/r.txt" ;;
    act) sed -n 's/^peak memory .* activations \([0-9.]*\) .*/\1/p' "$tmp/r.txt" ;;
    esac
}
none=$(field "$S,recompute=none" time)
full=$(field "$S,recompute=full" time)
[ "$(field "$S,recompute=full,recompute_layers=0" time)" = "$none" ] || fail "recompute_layers=0 is not recompute=none"
[ "$(field "$S,recompute=full,recompute_layers=12" time)" = "$full" ] || fail "recompute_layers=12 (a whole stage) is not full"
[ "$(field "$S,recompute=full,recompute_layers=99" time)" = "$full" ] || fail "more layers than a stage has is not full"
t4=$(field "$S,recompute=full,recompute_layers=4" time)
t8=$(field "$S,recompute=full,recompute_num_layers=8" time) # Megatron's own name
a4=$(field "$S,recompute=full,recompute_layers=4" act)
a8=$(field "$S,recompute=full,recompute_layers=8" act)
python3 - "$none" "$t4" "$t8" "$full" "$a4" "$a8" <<'PY' || fail "time not growing or activations not shrinking with recompute_layers"
import sys
n, t4, t8, f, a4, a8 = map(float, sys.argv[1:])
assert n < t4 < t8 < f, (n, t4, t8, f)
assert a8 < a4, (a4, a8)
PY
# the strategy line carries the key, so --compare and the planner's cache keep them apart
"$TRAINSIM" run "${P[@]}" --strategy "$S,recompute=full" --compare recompute_layers=3,6 > "$tmp/c.txt" 2>&1 \
    || { cat "$tmp/c.txt" >&2; fail "--compare recompute_layers=3,6 failed"; }
grep -q 'recompute_layers=6' "$tmp/c.txt" || { cat "$tmp/c.txt" >&2; fail "--compare: no recompute_layers=6 column"; }
# the planner's fast fidelity: layers that differ are not cut, so it matches run
"$TRAINSIM" plan "${P[@]}" --gpus 8 --global-batch 32 --dtype bf16 --quiet --csv \
    --strategies "tp=2,pp=2,dp=2,mb=2,attn=flash,recompute=full,recompute_layers=4" > "$tmp/p.csv" 2> "$tmp/p.err" \
    || { cat "$tmp/p.err" >&2; fail "plan with recompute_layers failed"; }
python3 - "$tmp/p.csv" "$t4" <<'PY' || fail "plan's fast fidelity off run's time for recompute_layers=4"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
t = float(rows[0]["iteration_s"]); r = float(sys.argv[2])
assert "recompute_layers=4" in rows[0]["strategy"], rows[0]["strategy"]
assert abs(t / r - 1) < 0.02, (t, r)
PY
expect_fail 'recompute_layers=3' 'recompute=selective' -- run "${P[@]}" --strategy "$S,recompute=selective,recompute_layers=3"
expect_fail 'recompute_layers' 'recompute=none' -- run "${P[@]}" --strategy "$S,recompute_layers=3"
expect_fail 'recompute_layers' 'expected the number of layers' -- run "${P[@]}" --strategy "$S,recompute=full,recompute_layers=-1"
expect_fail 'recompute_layers' 'recompute=oases' -- run --platform oases-3090 --strategy "tp=4,dp=8,mb=4,gb=640,schedule=oases,recompute_layers=2"
expect_fail 'Merak' 'ckpt_ratio' -- run "${P[@]}" --strategy "$S,recompute=full,pipeline=merak_last_no_recompute,recompute_layers=2"
finish
