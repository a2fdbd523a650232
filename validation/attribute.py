#!/usr/bin/env python3
"""attribute.py -- which kind of kernel would explain a group's misses.

Reads `trainsim validate --csv` (a file or stdin) and, for every group (and
subset) whose cases carry their kernels' seconds by class (whole iterations: the
kernels_*_s columns), asks one question per class and per pair of classes:
if the simulation priced that class k times as long, which k fits the
measurements best (least squares on the relative error), and what would the
error then be?  Scaling a class by k adds (k - 1) x its kernels' seconds to
the iteration, as if those kernels were all on the critical path: a first
-order attribution, not a model.

A diagnostic for finding what is wrong, never a calibration: the catalogue's
parameters are fitted on micro-level data only (platforms/README.md), and a
factor fitted here must not be stored anywhere.  docs/validation.md reports
what it found.

    build/trainsim validate --group e2e-mosaicml-h100 --csv > m.csv
    python3 validation/attribute.py m.csv [--rows ID,ID,...] [--exclude ID,...]
"""
import argparse
import csv
import itertools
import signal
import sys

CLASSES = ["gemm", "attention", "elementwise", "optimizer", "measured"]


def solve(a, b):
    """Least squares: the x minimising |a x - b| (normal equations, Gauss)."""
    n = len(a[0])
    m = [[sum(r[i] * r[j] for r in a) for j in range(n)] + [sum(r[i] * y for r, y in zip(a, b))] for i in range(n)]
    for i in range(n):
        p = max(range(i, n), key=lambda k: abs(m[k][i]))
        if abs(m[p][i]) < 1e-300:
            return None
        m[i], m[p] = m[p], m[i]
        for k in range(n):
            if k != i:
                f = m[k][i] / m[i][i]
                m[k] = [x - f * y for x, y in zip(m[k], m[i])]
    return [m[i][n] / m[i][i] for i in range(n)]


def stats(errs):
    n = len(errs)
    return (100 * sum(abs(e) for e in errs) / n, 100 * max(abs(e) for e in errs), 100 * sum(errs) / n)


def attribute(cases):
    """cases: (measured, simulated, {class: seconds}).  Returns the rows of
    the report: (label, scales, MAPE, worst, bias)."""
    base = [s / m - 1 for m, s, _ in cases]
    rows = [("as simulated", "", *stats(base))]
    present = [c for c in CLASSES if any(k[c] > 0 for _, _, k in cases)]
    for n in (1, 2):
        for combo in itertools.combinations(present, n):
            # measured = simulated + sum_c (k_c - 1) kernels_c, relative to measured
            a = [[k[c] / m for c in combo] for m, _, k in cases]
            b = [(m - s + sum(k[c] for c in combo)) / m for m, s, k in cases]
            x = solve(a, b)
            if x is None:
                continue
            errs = [(s + sum((xi - 1) * k[c] for xi, c in zip(x, combo))) / m - 1 for m, s, k in cases]
            label = " + ".join(combo)
            rows.append((label, " ".join("%s x%.2f" % (c, xi) for c, xi in zip(combo, x)), *stats(errs)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="?", help="trainsim validate --csv output (default: stdin)")
    ap.add_argument("--rows", help="only these cases (their first word, e.g. mosaic-046), comma-separated")
    ap.add_argument("--exclude", help="leave these cases out, comma-separated")
    a = ap.parse_args()
    only = set(a.rows.split(",")) if a.rows else None
    skip = set(a.exclude.split(",")) if a.exclude else set()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # a closed pipe (| head) ends the report quietly
    f = open(a.csv, newline="") if a.csv else sys.stdin
    groups = {}
    rd = csv.DictReader(f)
    if any(("kernels_%s_s" % c) not in (rd.fieldnames or []) for c in CLASSES):
        sys.exit("attribute.py: %s: no kernels_*_s columns (the output of trainsim validate --csv)"
                 % (a.csv or "stdin"))
    for r in rd:
        ident = r["case"].split()[0] if r["case"] else ""
        if (only is not None and ident not in only) or ident in skip:
            continue
        if not r["kernels_gemm_s"]:
            continue  # not a whole iteration: no kernel classes
        k = {c: float(r["kernels_%s_s" % c]) for c in CLASSES}
        key = r["group"] + ("/" + r["subset"] if r["subset"] else "")
        for g in (r["group"], key) if key != r["group"] else (key,):
            groups.setdefault(g, []).append((float(r["measured"]), float(r["simulated"]), k))
    if not groups:
        sys.exit("attribute.py: no case with kernel classes (the end-to-end cases carry them)")
    for g in sorted(groups):
        cases = groups[g]
        print("%s: %d cases" % (g, len(cases)))
        print("  %-34s %-40s %7s %7s %7s" % ("scaled", "fitted scale", "MAPE %", "worst %", "bias %"))
        for label, scales, mape, worst, bias in attribute(cases):
            print("  %-34s %-40s %7.2f %7.1f %+7.2f" % (label, scales, mape, worst, bias))
    return 0


if __name__ == "__main__":
    sys.exit(main())
