#!/bin/bash
# run_reduced.sh — `trainsim run` simulates data-parallel replicas that
# repeat others once (sim/fold.c) and gives the same results as --exact:
# iteration time and peak memory within 0.1 % (they agree to the last digit
# on these), per-GPU rows for every GPU; under one switch, in a fat tree's
# leaf, and TP peers on an NVSwitch, with pipelines, ZeRO-1/3, DP overlap,
# sequence parallelism and MoE (ep=1). The
# reduction must happen where it can (simulated_gpus below gpus) and not
# where a rank's own output is asked for (--trace) or the groups do not
# span whole servers.
. "$(dirname "$0")/reduced.bash"
same rtx4090-4x8 "$S" tp=8,dp=4,mb=1,gb=8,dtype=bf16 16
same rtx3090-16x4 "$S" tp=2,pp=2,dp=16,mb=1,gb=32,dtype=fp16,recompute=full,zero=3 16
same rtx4090-4x8 "$S" tp=8,dp=4,mb=1,gb=8,dtype=bf16,zero=1,dp_overlap=1 16
same dgx-h100-16n "$S" tp=8,pp=2,dp=8,mb=1,gb=16,dtype=bf16 32  # a fat tree: each DP group in one leaf
same a100-pcie-8x8 gpt-moe-350m tp=8,dp=8,mb=1,gb=16,dtype=bf16 16
# NVSwitch servers with a NIC per GPU (rails): two of eight TP peers stand for all
same azure-nd-a100-v4 "$S" tp=8,dp=1,mb=1,gb=8,dtype=bf16,sp=1 2
same "$A" "$S" tp=8,dp=4,mb=1,gb=8,dtype=bf16 4
same "$A" "$S" tp=8,pp=2,dp=2,mb=1,gb=8,dtype=bf16,zero=1,sp=1 8
same "$A" "$S" tp=8,dp=4,mb=1,gb=8,dtype=bf16,zero=3,recompute=full 4
same "$A" gpt-moe-350m tp=8,dp=4,mb=1,gb=8,dtype=bf16 4
# TP peers exchanging chunks point to point (tp_overlap_comm) stay whole
same "$A" "$S" tp=8,dp=4,mb=1,gb=8,dtype=bf16,tp_overlap_comm=1,sp=1 32
# H100 servers: NCCL would reduce on the switch (NVLS), so TP peers stay whole
same dgx-h100-16n "$S" tp=8,pp=2,dp=8,mb=1,gb=16,dtype=bf16,recompute=full 32
# two DP replicas share each server: nothing to fold
same rtx4090-4x8 "$S" tp=4,pp=2,dp=4,mb=1,gb=8,dtype=bf16 32
# a DP group over two leaves whose small gradients NCCL would all-reduce by
# tree (not simulable on two servers), on H100 (NVLS): every GPU runs
same dgx-h100-16n "$S" tp=8,dp=16,mb=1,gb=16,dtype=bf16 128
# a trace wants every rank
"$TRAINSIM" --json --platform rtx4090-4x8 --model "$S" --strategy tp=8,dp=4,mb=1,gb=8,dtype=bf16 \
    --trace "$tmp/t.json" > "$tmp/r.json" || fail "traced run"
grep -q simulated_gpus "$tmp/r.json" && fail "a traced run was reduced"
"$TRAINSIM" --platform rtx4090-4x8 --model "$S" --strategy tp=8,dp=4,mb=1,gb=8,dtype=bf16 | grep -q \
    "^reduced  *16 of the 32 GPUs simulated" || fail "the text report does not say it was reduced"
echo ok
