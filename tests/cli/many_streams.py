"""many_streams.py N OUT — a one-GPU schedule of N streams of one 1 ms kernel
each (an actor per stream): for the tests of the limits on actors."""
import json
import sys

n, out = int(sys.argv[1]), sys.argv[2]
streams = [{"name": f"s{i}", "ops": [{"id": i, "op": "compute", "kernel": "fixed", "name": "k", "seconds": 0.001}]}
           for i in range(n)]
json.dump({"format": "trainsim-schedule", "version": 1, "meta": {"name": "many-streams"}, "nranks": 1,
           "communicators": [], "ranks": [{"rank": 0, "streams": streams}]}, open(out, "w"))
