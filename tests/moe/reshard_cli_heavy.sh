#!/bin/bash
# `trainsim reshard`: the paper's 16 microbenchmark rows, byte-identical across
# runs; --pipeline prints one row per implementation; bad options are refused.
set -u
fail() { echo "FAIL: $*"; exit 1; }
a=$("$TRAINSIM" reshard) || fail "reshard"
b=$("$TRAINSIM" reshard) || fail "second reshard"
echo "$a"
[ "$a" = "$b" ] || fail "two runs differ"
[ "$(echo "$a" | grep -cE '^(1->|case[0-9])')" = 16 ] || fail "expected 16 case rows"
"$TRAINSIM" reshard --json | python3 -c "import json,sys; d=json.load(sys.stdin); assert len(d['cases'])==16" || fail "json"
"$TRAINSIM" reshard --bogus 2>/dev/null && fail "bad option accepted"
p=$("$TRAINSIM" reshard --pipeline --micro 4) || fail "pipeline"
echo "$p"
[ "$(echo "$p" | grep -cE '^(send_recv|broadcast)')" = 5 ] || fail "expected 5 implementation rows"
"$TRAINSIM" reshard --pipeline --stages 9 2>/dev/null && fail "9 stages on 5 nodes accepted"
echo ok
