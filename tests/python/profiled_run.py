"""One run of a model under nxrt's profiler: which ops executed, and the outputs (for
tests of graph passes, which check both what a pass left and what it computes)."""

import json
import os

import nxrt


def profiled_run(model, feeds, threads=1, disabled=()):
    """(sorted op types of the executed nodes, one entry per node; the run's outputs)."""
    options = nxrt.SessionOptions()
    options.enable_profiling = True
    options.intra_op_num_threads = threads
    sess = nxrt.InferenceSession(model, options, disabled_optimizers=list(disabled))
    outputs = sess.run(None, feeds)
    path = sess.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    ops = sorted(e["args"]["op_name"] for e in events
                 if e.get("cat") == "Node" and "op_name" in e.get("args", {}))
    return ops, outputs
