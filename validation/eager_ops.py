#!/usr/bin/env python3
"""eager_ops.py — the element-wise work of a PyTorch eager training step, per aten op.

Reads Kineto traces recorded with record_shapes (validation/data/h100-micro/trace_gpt-*.json.gz:
one step of bench/gpu/measure.py's GPT under torch.autocast over fp32 weights) and prints, per
transformer layer, the time, bytes and rate of the non-GEMM, non-attention kernels grouped by what
launched them (docs/validation.md, "Issue 13, the eager stack on one H100").

A kernel is tied to the innermost cpu_op with its "External id"; the outermost op that is not an
autograd engine frame names the group (aten::layer_norm, NativeLayerNormBackward0, ...), the
innermost op's "Input Dims" and "Input type" give the bytes (reads + writes, by the op's
semantics below).  Per-layer figures divide by the layer count; head items (loss, embeddings,
output layer) are per step.

usage: eager_ops.py [--layers N,...] TRACE.json.gz ...   (layers default from the file name)
"""
import gzip
import json
import re
import sys
from collections import defaultdict

SIZE = {"float": 4, "c10::BFloat16": 2, "c10::Half": 2, "long int": 8}
LAYERS = {"125m": 12, "350m": 24, "760m": 24, "1.3b": 24, "2.7b": 32}  # steps.csv


def kernel_class(name):
    if re.search(r"cudnn|flash|fmha", name, re.I):
        return "attention"
    if re.search(r"nvjet|gemm|cutlass|xmma|cublas", name, re.I):
        return "gemm"
    if re.search(r"multi_tensor|adam", name, re.I):
        return "optimizer"
    return "other"


def numel(dims):
    n = 1
    for x in dims:
        n *= x
    return n


def op_bytes(op, kernel):
    """Bytes read + written by the kernel, from its op's inputs (None when not modelled)."""
    a = op["args"]
    dims, types, name = a.get("Input Dims") or [], a.get("Input type") or [], op["name"]

    def sz(i):
        return SIZE.get(types[i], 0) if i < len(types) else 0

    if "Memset" in kernel or "Memcpy" in kernel or not dims:
        return None
    n = numel(dims[0]) if dims[0] and not isinstance(dims[0][0], list) else 0
    if name == "aten::copy_":
        return n * (sz(0) + sz(1))
    if name in ("aten::add", "aten::add_"):
        return n * (sz(0) + sz(1) + max(sz(0), sz(1)))
    if name == "aten::native_layer_norm":
        return 2 * n * sz(0)
    if name == "aten::native_layer_norm_backward":  # grad_input: dy, x read, dx written; gamma/beta: dy, x read
        return (3 if "grad_input" in kernel else 2) * n * sz(0)
    if name == "aten::cat":
        return 2 * sum(numel(x) for x in dims[0]) * 2
    if name == "aten::sum":
        return n * sz(0)
    if name in ("aten::gelu", "aten::_log_softmax"):
        return 2 * n * sz(0)
    if name in ("aten::gelu_backward", "aten::_log_softmax_backward_data"):
        return 3 * n * sz(0)
    if name == "aten::fill_":
        return n * sz(0)
    return None


def category(phase, top, inner, kernel, dims, h):
    """A readable group for one kernel; None for what the tables leave out."""
    d = dims[0] if dims and dims[0] and not isinstance(dims[0][0], list) else []
    act = len(d) == 3 and d[-1] == h  # a [b, s, h] activation
    vocab = any(x > 50000 for x in d)
    if "Memset" in kernel:
        return "memsets"
    if phase == "F":
        if top == "aten::add":
            return "F residual add (fp32 + 16-bit)" if act else "head: embeddings"
        if top == "aten::layer_norm":
            return "F LayerNorm (fp32)"
        if top == "aten::gelu":
            return "F GELU"
        if top == "aten::linear" and inner == "aten::copy_":
            return "F activation cast to 16-bit" if len(d) == 3 else (
                "head: output weight cast" if vocab else "F weight/bias casts")
        if top in ("aten::to", "aten::cross_entropy_loss"):
            return "head: loss"
        return "head: embeddings" if top == "aten::embedding" else None
    if top == "UnbindBackward0":
        return "B qkv gradients stacked (cat)"
    if top == "ViewBackward0":
        return "B qkv permute -> contiguous copy"
    if top == "NativeLayerNormBackward0":
        return "B LayerNorm grad_input (fp32)" if "grad_input" in kernel else "B LayerNorm gamma/beta (fp32)"
    if top == "GeluBackward0":
        return "B GELU"
    if top == "aten::add_":
        return "B residual-gradient sum (fp32)" if act else "head: tied-gradient sum"
    if top == "ToCopyBackward0":
        if len(d) == 3:
            return "head: loss" if vocab else "B activation-gradient cast to fp32"
        return "head: output gradient cast" if vocab else "B weight/bias-gradient casts"
    if top == "aten::to":
        return "B residual-gradient cast to 16-bit"
    if top == "aten::sum":
        return "B bias-gradient reductions" if len(d) == 2 else None
    if top in ("LogSoftmaxBackward0", "NllLossBackward0"):
        return "head: loss"
    if top in ("EmbeddingBackward0", "SliceBackward0"):
        return "head: embeddings"
    return None


def analyse(path, layers, h):
    ev = json.load(gzip.open(path))["traceEvents"]
    ops = [e for e in ev if e.get("cat") == "cpu_op" and e.get("ph") == "X"]
    by_ext, by_tid, parent = {}, defaultdict(list), {}
    for o in ops:
        by_ext.setdefault(o["args"].get("External id"), o)
        by_tid[o["tid"]].append(o)
    for lst in by_tid.values():  # nesting by time on each thread
        lst.sort(key=lambda o: (o["ts"], -o["dur"]))
        stack = []
        for o in lst:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= o["ts"]:
                stack.pop()
            parent[id(o)] = stack[-1] if stack else None
            stack.append(o)
    fwd_tid = min(by_tid, key=lambda t: min(o["ts"] for o in by_tid[t]))  # backward runs on autograd's thread
    classes, rows, counted = defaultdict(float), defaultdict(lambda: [0.0, 0.0, 0]), set()
    for k in ev:
        if k.get("cat") not in ("kernel", "gpu_memset", "gpu_memcpy"):
            continue
        cls = kernel_class(k["name"])
        classes[cls] += k["dur"]
        op = by_ext.get(k["args"].get("External id"))
        if cls != "other" or op is None:
            continue
        chain, o = [], op
        while o is not None:
            chain.append(o["name"])
            o = parent[id(o)]
        named = [n for n in reversed(chain) if not n.startswith("autograd::engine") and not n.startswith("Profiler")]
        top = named[0] if named else "?"
        c = category("F" if op["tid"] == fwd_tid else "B", top, op["name"], k["name"],
                     op["args"].get("Input Dims") or [], h)
        if c is None:
            c = "unclassified"
        r = rows[c]
        r[0] += k["dur"]
        # an op split into several kernels (a tensor past 2^31 elements) moves its bytes once; layer
        # norm's backward is two kernels of different traffic (op_bytes tells them apart)
        key = (id(op), "grad_input" in k["name"])
        if key not in counted:
            counted.add(key)
            r[1] += op_bytes(op, k["name"]) or 0
        r[2] += 1
    return classes, rows


def main(argv):
    paths = [a for a in argv if not a.startswith("--")]
    if not paths:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    for path in paths:
        m = re.search(r"gpt-([0-9.]+[mb])", path)
        size = m.group(1) if m else None
        if size not in LAYERS:
            print("%s: model size not in the file name (gpt-125m ... gpt-2.7b)" % path, file=sys.stderr)
            return 2
        layers, h = LAYERS[size], {"125m": 768, "350m": 1024, "760m": 1536, "1.3b": 2048, "2.7b": 2560}[size]
        classes, rows = analyse(path, layers, h)
        print("%s: %d layers, hidden %d; kernel time by class (ms): %s" % (
            path, layers, h, ", ".join("%s %.1f" % (c, t / 1e3) for c, t in sorted(classes.items()))))
        print("  %-40s %10s %10s %9s %7s" % ("group", "us", "MB", "GB/s", "kernels"))
        for c in sorted(rows, key=lambda c: (c.startswith("head") or c in ("memsets", "unclassified"), c)):
            t, b, n = rows[c]
            per = 1 if c.startswith("head") or c in ("memsets", "unclassified") else layers
            unit = "/step" if per == 1 else "/layer"
            print("  %-40s %10.1f %10.1f %9s %7d %s" % (c, t / per, b / per / 1e6, "%.0f" % (b / t / 1e3) if b else "-",
                                                        n, unit))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
