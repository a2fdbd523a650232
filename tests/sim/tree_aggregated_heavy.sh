#!/bin/bash
# tree_aggregated.sh on larger all-reduces (1 GB, 16 nodes): too slow for the
# sanitizer build, where SimGrid is ~40x slower.
CASES="4:128e6 4:1e9 16:128e6 16:1e9" exec bash "$(dirname "$0")/tree_aggregated.sh"
