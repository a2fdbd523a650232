#!/bin/bash
# run_reduced_heavy.sh — exact reductions on the larger cases: data-parallel
# groups over two leaves of a fat tree (the two kept servers on different
# leaves step as the whole ring does: within 0.1 %, here -0.0005 % and
# exact), and a run whose folded servers meet tree all-reduces (small
# gradients over 64 servers): it runs again with the servers whole and the
# TP peers still folded, exact.
. "$(dirname "$0")/reduced.bash"
C64=$(cluster 64)
same "$C64" gpt-3072 tp=8,pp=2,dp=32,mb=1,gb=64,dtype=bf16,recompute=full 8
same "$C64" gpt-13b tp=8,pp=1,dp=64,mb=1,gb=64,dtype=bf16,recompute=full,zero=1 4
same a100-sxm-128n "$S" tp=8,pp=2,dp=64,mb=1,gb=128,dtype=bf16 256
echo ok
