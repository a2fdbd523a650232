#!/bin/bash
# `trainsim reshard`: the paper's 16 microbenchmark rows, byte-identical across runs.
set -u
fail() { echo "FAIL: $*"; exit 1; }
a=$("$TRAINSIM" reshard) || fail "reshard"
b=$("$TRAINSIM" reshard) || fail "second reshard"
echo "$a"
[ "$a" = "$b" ] || fail "two runs differ"
[ "$(echo "$a" | grep -cE '^(1->|case[0-9])')" = 16 ] || fail "expected 16 case rows"
"$TRAINSIM" reshard --json | python3 -c "import json,sys; d=json.load(sys.stdin); assert len(d['cases'])==16" || fail "json"
"$TRAINSIM" reshard --bogus 2>/dev/null && fail "bad option accepted"
echo ok
