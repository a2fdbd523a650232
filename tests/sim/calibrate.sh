#!/bin/bash
# trainsim calibrate --check: the device parameters stored in
# platforms/catalog/ are what the fits (validation/fit_*.c) give on the data
# in validation/data (within 2 %), so the catalogue cannot drift from the data.
set -euo pipefail
out=$("$TRAINSIM" calibrate --check --data "$SRC/validation/data")
echo "$out" | tail -20
grep -q "A100-SXM-80GB nccl.efficiency.Simple" <<< "$out" || { echo "FAIL: no A100 fit reported"; exit 1; }
