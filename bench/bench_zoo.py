"""Benchmarks nxrt against onnxruntime on the model zoo (../shared/zoo/manifest.json) and
the models in ../shared/models, in one process, same inputs, interleaved blocks.

Usage:
  PYTHONPATH=python .venv/bin/python bench/bench_zoo.py [--threads 1 2] [--models ID ...]
      [--quick] [--markdown FILE] [--profile [--runs N] [--top K]]

For each model and thread count: an onnxruntime and an nxrt InferenceSession (both with
SessionOptions.intra_op_num_threads = threads, CPU), a check that the outputs match (the
manifest's tolerance), then timing with harness.compare(); stateful models carry their
state, separately for each runtime. Rounds, block size and warm-up are chosen from a first
timing so that each model takes a few seconds (--quick: about a second). Prints medians,
p99 and the ratio nxrt/onnxruntime (below 1: nxrt faster) per model, the geometric mean of
the ratios per thread count (models that nxrt cannot load, and mismatches, are left out),
and a markdown table (--markdown FILE writes it).

--profile instead runs nxrt alone with profiling on (--runs calls after one warm-up) and
prints per model the op types that take the most time (self time: the time of If/Loop/Scan
excludes their subgraphs' nodes and is shown as "If (own+gaps)"; nxrt records node times
in whole microseconds, so ops of well under 1 us are undercounted).

Missing zoo models are fetched first (scripts/fetch_zoo.py, into ~/.cache/nxrt-zoo or
$NXRT_ZOO_CACHE).
"""

import argparse
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict

# numpy's OpenBLAS starts spinning threads of its own, which take the second core from both
# runtimes at 2 threads; the benchmark's numpy does no heavy math.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import zoo  # noqa: E402

import nxrt  # noqa: E402
import onnxruntime as ort  # noqa: E402

# The models of ../shared/models, under their file names: (id, carry).
SHARED = [
    ("silero_vad_v5", {"1": "state"}),
    ("silero_vad_legacy", {"1": "h", "2": "c"}),
    ("oww_melspectrogram", None),
    ("ppocr_v4_det", None),
]


def shared_entries():
    import bench_models  # imports nxrt and onnxruntime too; its feeds_for() is reused

    entries = []
    for name, carry in SHARED:
        e = {"id": name, "path": os.path.join(bench_models.MODELS, name + ".onnx"),
             "tolerance": "float", "feeds": lambda seed, n=name: bench_models.feeds_for(n)}
        if carry:
            e["carry"] = carry
        entries.append(e)
    return entries


def select(requested):
    """The entries to run: zoo models (those with 'build' converted from their GGUF file
    by fetch_missing), then the shared ones; REQUESTED ids in their order."""
    all_entries = zoo.load_manifest() + shared_entries()
    if requested:
        by_id = {e["id"]: e for e in all_entries}
        unknown = [m for m in requested if m not in by_id]
        if unknown:
            sys.exit(f"unknown model id(s): {', '.join(unknown)}; known: {', '.join(by_id)}")
        return [by_id[m] for m in requested]
    return all_entries


def fetch_missing(entries):
    """Fetches the zoo models among ENTRIES that are not in the cache; returns {id: reason}
    for those still missing."""
    want = [e["id"] for e in entries
            if "path" not in e and "build" not in e and zoo.model_path(e) is None]
    missing = {}
    if want:
        print(f"fetching {len(want)} model(s) into {zoo.cache_dir()}", flush=True)
        for mid, (ok, msg) in zoo.fetch(want, out=sys.stdout).items():
            if not ok:
                missing[mid] = msg
    for e in entries:
        if "build" in e and zoo.model_path(e) is None:
            try:
                zoo.build(e, out=sys.stdout)
            except Exception as err:  # noqa: BLE001 - network, conversion: reported
                missing[e["id"]] = f"GGUF conversion failed: {zoo.first_line(err)}"
        if zoo.model_path(e) is None and e["id"] not in missing:
            missing[e["id"]] = "model file not found"
    return missing


def _ort_session(path, threads):
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.log_severity_level = 3
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def _nxrt_session(path, threads, profile_prefix=None, disabled=()):
    so = nxrt.SessionOptions()
    so.intra_op_num_threads = threads
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    return nxrt.InferenceSession(path, so, providers=["CPUExecutionProvider"],
                                 disabled_optimizers=list(disabled))


class Runner:
    """One call of a session per __call__, carrying state of stateful models."""

    def __init__(self, sess, entry, feeds):
        self.sess, self.entry, self.feeds = sess, entry, feeds
        self.stateful = bool(entry.get("carry"))

    def __call__(self):
        out = self.sess.run(None, self.feeds)
        if self.stateful:
            self.feeds = zoo.carry(self.entry, out, self.feeds)
        return out


def plan(pair_us, quick):
    """rounds, block and warmup for harness.compare() so that a model takes about 3 s
    (--quick: about 0.8 s); PAIR_US is one call of each runtime."""
    target_us = (0.8 if quick else 3.0) * 1e6
    pairs = max(1, int(target_us / max(pair_us, 1.0)))
    rounds = max(2 if quick else 4, min(6 if quick else 20, pairs))
    rounds += rounds % 2  # both runtimes go first equally often
    block = max(1, min(1000, pairs // rounds))
    warmup = max(1, min(2 if quick else 5, block))
    return {"rounds": rounds, "block": block, "warmup": warmup}


def bench_one(entry, path, threads, quick, baseline_disabled=None, cold=False):
    """Returns a result dict: status 'ok' / 'mismatch' / 'not loadable' / 'error'.
    BASELINE_DISABLED (graph pass names): the baseline is nxrt without those passes
    instead of onnxruntime (what a pass is worth, measured the same way)."""
    try:
        nx = _nxrt_session(path, threads)
    except Exception as err:  # noqa: BLE001 - any load error is reported, not raised
        return {"status": "not loadable", "error": zoo.first_line(err)}
    try:
        if baseline_disabled:
            rt = _nxrt_session(path, threads, disabled=baseline_disabled)
        else:
            rt = _ort_session(path, threads)
        feeds = zoo.make_feeds(entry, seed=0, session=rt)
        names = [o.name for o in rt.get_outputs()]
        expected = rt.run(None, feeds)
    except Exception as err:  # noqa: BLE001
        return {"status": "error", "error": f"onnxruntime: {zoo.first_line(err)}"}
    try:
        got = nx.run(None, feeds)
    except Exception as err:  # noqa: BLE001
        return {"status": "error", "error": f"nxrt run: {zoo.first_line(err)}"}
    mismatch = zoo.compare_outputs(entry, got, expected, names)
    nx_run = Runner(nx, entry, zoo.carry(entry, got, feeds))
    rt_run = Runner(rt, entry, zoo.carry(entry, expected, feeds))
    before = harness.CacheFlush() if cold else None
    t0 = time.perf_counter()
    for run in (nx_run, rt_run):  # the pair the timed loop repeats, flushes included
        if before:
            before()
        run()
    timing = plan((time.perf_counter() - t0) * 1e6, quick)
    r = harness.compare(nx_run, rt_run, settle_s=harness.settle_for(threads), before=before,
                        **timing)
    r.update(timing)
    r["status"] = "mismatch" if mismatch else "ok"
    if mismatch:
        r["error"] = mismatch
    return r


def fmt_us(us):
    if us >= 1e6:
        return f"{us / 1e6:.2f} s"
    if us >= 1e3:
        return f"{us / 1e3:.2f} ms"
    return f"{us:.1f} us"


def geomean(values):
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else float("nan")


def markdown(entries, results, threads, missing, baseline="onnxruntime", cold=False):
    t0 = threads[0]
    unit = lambda t: f"{t} thread" + ("s" if t != 1 else "")  # noqa: E731
    head = ["model", f"nxrt, {unit(t0)}", f"{baseline}, {unit(t0)}", f"ratio, {unit(t0)}"]
    head += [f"ratio, {unit(t)}" for t in threads[1:]]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    unloadable, notes = [], []
    for e in entries:
        mid = e["id"]
        if mid in missing:
            unloadable.append((mid, "not run", missing[mid]))
            continue
        per = results.get(mid, {})
        first = per.get(t0)
        if first is None or first["status"] in ("not loadable", "error"):
            bad = first or next(iter(per.values()), None)
            if bad is not None:
                unloadable.append((mid, bad["status"], bad["error"]))
            continue
        mark = ""
        if any(r["status"] == "mismatch" for r in per.values()):
            mark = " (outputs differ)"
            notes.append(mid)
        row = [mid + mark, fmt_us(first["nxrt_median_us"]), fmt_us(first["ort_median_us"]),
               f"{first['ratio']:.2f}"]
        for t in threads[1:]:
            r = per.get(t)
            row.append(f"{r['ratio']:.2f}" if r and "ratio" in r else "-")
        lines.append("| " + " | ".join(row) + " |")
    gm = ["**geometric mean**", "", "", f"**{geomean(ratios(results, t0)):.2f}**"]
    gm += [f"**{geomean(ratios(results, t)):.2f}**" for t in threads[1:]]
    lines.append("| " + " | ".join(gm) + " |")
    for mid, status, err in unloadable:
        lines.append(f"| {mid} | {status}: {err.replace('|', '/')} |" + " |" * (len(head) - 2))
    text = "\n".join(lines) + "\n"
    text += (f"\nMedian per call, nxrt and {baseline} in one process, interleaved blocks, "
             f"same inputs, state carried; ratio = nxrt / {baseline} (below 1: nxrt is "
             "faster). The geometric mean leaves out models that could not be loaded"
             + (" and those whose outputs differ." if notes else ".")
             + (" Cold: 16 MiB written before every timed call, so no weights are left in "
                "L1/L2." if cold else "") + "\n")
    return text


def ratios(results, threads):
    return [per[threads]["ratio"] for per in results.values()
            if threads in per and per[threads]["status"] == "ok"]


def baseline_label(args):
    if args.baseline_disabled:
        return "nxrt without " + "+".join(args.baseline_disabled)
    return "onnxruntime"


def run_bench(entries, args, missing):
    results = {}
    for e in entries:
        mid = e["id"]
        if mid in missing:
            print(f"{mid:<28} skipped: {missing[mid]}", flush=True)
            continue
        path = zoo.model_path(e)
        per = results.setdefault(mid, {})
        for threads in args.threads:
            r = bench_one(e, path, threads, args.quick, args.baseline_disabled, args.cold)
            per[threads] = r
            if r["status"] in ("not loadable", "error"):
                print(f"{mid:<28} {r['status']}: {r['error']}", flush=True)
                break
            line = harness.format_row(mid, threads, r, baseline_label(args))
            line += f"  [{r['rounds']}x{r['block']}]"
            if r["status"] == "mismatch":
                line += f"  OUTPUTS DIFFER: {r['error']}"
            print(line, flush=True)
    print()
    for t in args.threads:
        rs = ratios(results, t)
        print(f"geometric mean of ratios, {t} thread(s): {geomean(rs):.3f} over {len(rs)} "
              f"models")
    bad = [(m, r) for m, per in results.items() for r in per.values() if r["status"] != "ok"]
    seen = set()
    for mid, r in bad:
        if (mid, r["status"]) not in seen:
            seen.add((mid, r["status"]))
            print(f"  {mid}: {r['status']}: {r['error']}")
    table = markdown(entries, results, args.threads, missing, baseline_label(args), args.cold)
    print("\n" + table)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(table)
        print(f"wrote {args.markdown}")
    return results


# ---------------------------------------------------------------------------------------
# Profiling


def self_times(events):
    """(op type, self time in us) per event: the time of an event minus that of the
    events nested in it (the nodes of If/Loop/Scan subgraphs). nxrt records the events in
    the order the nodes finish, so a node's subgraph nodes come right before it."""
    evs = [e for e in events if e.get("ph", "X") == "X"]
    own = [float(e["dur"]) for e in evs]
    parent = [False] * len(evs)
    roots = []  # finished events not (yet) known to be inside another
    for i, e in enumerate(evs):
        while roots:
            c = evs[roots[-1]]
            # Inside e: started at or after e did, and (times are whole microseconds) did
            # not end by e's start.
            if c["ts"] >= e["ts"] and c["ts"] + c["dur"] > e["ts"]:
                own[i] -= c["dur"]
                parent[i] = True
                roots.pop()
            else:
                break
        roots.append(i)
    # A container's own time also holds the gaps between its subgraph's nodes (dispatch,
    # and the rounding of their times to whole microseconds): it is labelled as such.
    return [(e.get("args", {}).get("op_name", e.get("name", "?"))
             + (" (own+gaps)" if is_parent else ""), max(o, 0.0))
            for e, o, is_parent in zip(evs, own, parent)]


def profile_one(entry, path, threads, runs, top, tmpdir):
    prefix = os.path.join(tmpdir, f"{entry['id']}_t{threads}_")
    try:
        nx = _nxrt_session(path, threads, profile_prefix=prefix)
    except Exception as err:  # noqa: BLE001
        print(f"{entry['id']:<28} not loadable: {zoo.first_line(err)}", flush=True)
        return None
    feeds = zoo.make_feeds(entry, seed=0, session=nx)
    run = Runner(nx, entry, feeds)
    run()  # warm-up (its nodes are in the profile too)
    walls = []
    for _ in range(runs):
        t0 = time.perf_counter()
        run()
        walls.append((time.perf_counter() - t0) * 1e6)
    trace = nx.end_profiling()
    with open(trace) as f:
        events = json.load(f)
    os.remove(trace)
    per_op = defaultdict(lambda: [0.0, 0])
    for op, us in self_times(events):
        per_op[op][0] += us
        per_op[op][1] += 1
    total = sum(v[0] for v in per_op.values())
    calls = runs + 1
    wall = float(np.median(walls))
    print(f"{entry['id']} (threads {threads}): median {fmt_us(wall)} per run over {runs} runs;"
          f" nodes sum {fmt_us(total / calls)} per run ({100 * total / calls / wall:.0f}% of "
          f"the run)", flush=True)
    ranked = sorted(per_op.items(), key=lambda kv: -kv[1][0])
    for op, (us, n) in ranked[:top]:
        pct = 100.0 * us / total if total else 0.0
        print(f"    {op:<26} {pct:5.1f}%  {fmt_us(us / calls):>10} per run  "
              f"{n / calls:5.0f} nodes", flush=True)
    if len(ranked) > top:
        rest = sum(v[0] for _, v in ranked[top:])
        print(f"    {'(' + str(len(ranked) - top) + ' other op types)':<26} "
              f"{100.0 * rest / total if total else 0.0:5.1f}%", flush=True)
    return dict(ranked)


def run_profile(entries, args, missing):
    tmpdir = tempfile.mkdtemp(prefix="nxrt-zoo-profile-")
    try:
        for e in entries:
            if e["id"] in missing:
                print(f"{e['id']:<28} skipped: {missing[e['id']]}", flush=True)
                continue
            for threads in args.threads:
                profile_one(e, zoo.model_path(e), threads, args.runs, args.top, tmpdir)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--models", nargs="+", metavar="ID", help="ids (zoo or ../shared/models)")
    ap.add_argument("--quick", action="store_true", help="shorter timing (about 1 s a model)")
    ap.add_argument("--markdown", metavar="FILE", help="write the markdown table to FILE")
    ap.add_argument("--profile", action="store_true",
                    help="profile nxrt per op type instead of comparing with onnxruntime")
    ap.add_argument("--cold", action="store_true",
                    help="flush L1/L2 (write 16 MiB) before every timed call: the latency "
                         "of a model run between other work, not back to back")
    ap.add_argument("--runs", type=int, default=10, help="profiled runs per model (--profile)")
    ap.add_argument("--top", type=int, default=8, help="op types to show (--profile)")
    ap.add_argument("--baseline-disabled", nargs="+", metavar="PASS",
                    help="compare with nxrt without these graph passes instead of onnxruntime")
    args = ap.parse_args(argv)
    entries = select(args.models)
    missing = fetch_missing(entries)
    print(f"nxrt {getattr(nxrt, '__version__', '?')}, onnxruntime {ort.__version__}, "
          f"{len(entries) - len(missing)} models, threads {args.threads}", flush=True)
    if args.profile:
        run_profile(entries, args, missing)
    else:
        run_bench(entries, args, missing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
