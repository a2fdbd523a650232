"""trace_format.py — checks a trainsim Chrome trace (plain or .gz) the way a
viewer reads it; used by tests/cli/trace.sh.  Exit status 1 with the
problems listed.

  python3 trace_format.py TRACE [--ranks 0,1,...] [--window FROM:TO]

- valid JSON with a traceEvents list; every X event has pid, tid, ts >= 0,
  dur >= 0 (microseconds, at most three decimals: whole nanoseconds);
- on every track (pid, tid) the slices are well nested: a slice that starts
  inside another ends inside it (no partial overlaps, not even by 1 ns);
- every flow start ("s") has exactly one finish ("f") with its id, each
  inside a slice of its own track;
- with --ranks: events only on those ranks; with --window: every X event
  meets [FROM, TO] (simulated seconds)."""
import gzip, json, sys
from collections import defaultdict


def load(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw)


def ns(v):
    return round(v * 1000)


def main(argv):
    path, ranks, window = argv[1], None, None
    i = 2
    while i < len(argv):
        if argv[i] == "--ranks":
            ranks = {int(r) for r in argv[i + 1].split(",")}
        elif argv[i] == "--window":
            a, b = argv[i + 1].split(":")
            window = (float(a) * 1e9, float(b) * 1e9)
        i += 2
    d = load(path)
    ev = d.get("traceEvents")
    if not isinstance(ev, list) or not ev:
        return ["no traceEvents list"]
    bad = []
    tracks = defaultdict(list)
    for e in ev:
        if e.get("ph") != "X":
            continue
        ts, dur = e.get("ts"), e.get("dur")
        if not (isinstance(ts, (int, float)) and ts >= 0 and isinstance(dur, (int, float)) and dur >= 0):
            bad.append(f"X event without ts/dur >= 0: {e}")
            continue
        if abs(ts * 1000 - ns(ts)) > 1e-6 * max(1, ts) or abs(dur * 1000 - ns(dur)) > 1e-6 * max(1, dur):
            bad.append(f"ts/dur not in whole nanoseconds: {e}")
        tracks[(e["pid"], e["tid"])].append((ns(ts), ns(ts) + ns(dur), e.get("name")))
        if ranks is not None and e["pid"] not in ranks:
            bad.append(f"an event on rank {e['pid']}, outside --ranks")
        if window and (ns(ts) > window[1] + 1 or ns(ts) + ns(dur) < window[0] - 1):
            bad.append(f"an event outside the window: {e}")
    for key, sl in tracks.items():
        sl.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for a, b, name in sl:
            while stack and stack[-1][1] <= a:
                stack.pop()
            if stack and b > stack[-1][1]:
                bad.append(f"track {key}: {name!r} [{a}, {b}] ns overlaps {stack[-1][2]!r} "
                           f"[{stack[-1][0]}, {stack[-1][1]}] ns without nesting")
                break
            stack.append((a, b, name))
    starts, finishes = defaultdict(list), defaultdict(list)
    for e in ev:
        if e.get("ph") in ("s", "f"):
            (starts if e["ph"] == "s" else finishes)[e["id"]].append(e)
    for fid in set(starts) | set(finishes):
        if len(starts[fid]) != 1 or len(finishes[fid]) != 1:
            bad.append(f"flow {fid}: {len(starts[fid])} starts, {len(finishes[fid])} finishes")
            continue
        for e in starts[fid] + finishes[fid]:
            t = ns(e["ts"])
            if not any(a <= t <= b for a, b, _ in tracks.get((e["pid"], e["tid"]), [])):
                bad.append(f"flow {fid}: its {e['ph']} at {t} ns is in no slice of track ({e['pid']}, {e['tid']})")
    return bad[:20]


if __name__ == "__main__":
    problems = main(sys.argv)
    if problems:
        print("\n".join(problems))
        sys.exit(1)
