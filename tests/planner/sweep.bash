# sweep.bash — sourced by the planner's CLI tests (plan_cli.sh, plan_resume.sh,
# plan_mpi.sh, plan_cache_corrupt.sh); not a test itself.  It moves into a
# temporary directory (removed at exit) and defines the small sweep they all
# run, ${args[@]} (4 RTX 3090s, gpt-1024, a few strategies: seconds), and
# fail MESSAGE (print it and exit 1).
: "${TRAINSIM:?path of the trainsim binary}"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T"
args=(plan --platform oases-3090 --gpus 4 --model gpt-1024 --global-batch 16 --quiet
      --axis schedule=megatron --axis sp=0 --axis vstages=1 --axis zero=0)
fail() { echo "FAIL: $*"; exit 1; }
