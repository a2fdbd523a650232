#!/usr/bin/env bash
# mpirun -np 2 trainsim plan gives the same ranking as a local run.
set -euo pipefail
if ! command -v mpirun > /dev/null; then
  echo "SKIPPED: mpirun not found (bash setup.sh installs openmpi-bin)"
  exit 0
fi
. "$(dirname "$0")/sweep.bash"
"$TRAINSIM" "${args[@]}" --no-cache > local.txt 2>/dev/null
if "$TRAINSIM" --help | grep -q 'not in this build' || ! "$TRAINSIM" plan --help | grep -q 'over the ranks\.'; then
  echo "SKIPPED: this trainsim was built without MPI"
  exit 0
fi
mpirun --allow-run-as-root --oversubscribe -np 2 "$TRAINSIM" "${args[@]}" --cache c --jobs 1 > mpi.txt 2> mpi.err \
  || fail "mpirun failed: $(cat mpi.err)"
cmp local.txt mpi.txt || fail "MPI ranking differs from the local one"
grep -q 'x 2 ranks' mpi.err || fail "did not run on 2 ranks: $(cat mpi.err)"
total=$(sed -n 's/.*, \([0-9]*\) simulated$/\1/p' local.txt)
[ "$(grep -c . c/results.tsv)" = "$total" ] || fail "the ranks' cache records do not add up to $total"
# and the cache the ranks wrote serves a local run
"$TRAINSIM" "${args[@]}" --cache c > again.txt 2> again.err
cmp local.txt again.txt && grep -q ': 0 evaluated' again.err || fail "MPI-written cache not reused"
echo ok
