#!/bin/bash
# `trainsim moe` input errors are clear, and `run` refuses bad ep values
# with a message (no simulation: fast under the sanitizers).
set -u
fail() { echo "FAIL: $*"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
out=$("$TRAINSIM" moe --platform h100-pcie-2x8 --strategy "ep=3" 2>&1) && fail "ep=3 accepted"
echo "$out" | grep -q "ep=3 must divide" || fail "ep=3 message: $out"
out=$("$TRAINSIM" moe --platform h100-pcie-2x8 --strategy "ep=8,routing=trace:$T/none.json" 2>&1) && fail "missing trace accepted"
echo "$out" | grep -q "none.json" || fail "missing trace message: $out"
out=$("$TRAINSIM" moe --platform h100-pcie-2x8 --strategy "ep=8,balanse=all" 2>&1) && fail "typo accepted"
echo "$out" | grep -q 'unknown key "balanse"' || fail "typo message: $out"
out=$("$TRAINSIM" moe --platform h100-pcie-2x8 --model gpt-moe-1.3b --strategy "ep=1" 2>&1) && fail "52B parameters on one GPU accepted"
echo "$out" | grep -q "out of GPU memory on stage 0: needs 844" || fail "OOM message: $out"
out=$("$TRAINSIM" run --platform h100-pcie-2x8 --model gpt-moe-350m --strategy tp=1,dp=16,ep=3 2>&1) && fail "run with ep=3"
echo "$out" | grep -q "ep=3 does not divide the 128 experts" || fail "run ep message: $out"
echo ok
