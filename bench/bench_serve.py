"""`nxrt serve` under load: aggregate decode throughput and time to first token of
concurrent streaming clients, with continuous batching (--batch N) and without (--batch 1),
next to one client alone. SmolLM2-135M-Instruct int4 converted from the zoo's GGUF; with
--llama-cpp also llama.cpp's server (llama-cpp-python[server]) on the GGUF itself, the
same load and thread count.

  PYTHONPATH=python .venv/bin/python bench/bench_serve.py [--clients 32] [--requests 2]
      [--tokens 64] [--threads 1] [--batch 8 1] [--weights int4|int4-u8] [--llama-cpp]
"""
import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), ".."))
NXRT = os.path.join(ROOT, "build", "tools", "nxrt")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stream(port, prompt, tokens):
    """One streamed completion: (time to first token, tokens, seconds)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    start = time.perf_counter()
    conn.request("POST", "/v1/completions", json.dumps(
        {"prompt": prompt, "max_tokens": tokens, "temperature": 0, "stream": True,
         "stream_options": {"include_usage": True}}), {"Content-Type": "application/json"})
    res = conn.getresponse()
    first, usage, pieces = None, None, 0
    for line in res:
        if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
            continue
        event = json.loads(line[6:])
        if event["choices"] and event["choices"][0]["text"]:
            pieces += 1
            if first is None:
                first = time.perf_counter() - start
        usage = event.get("usage") or usage
    conn.close()
    # A server without stream usage (llama-cpp-python's) sends a chunk per token.
    tokens = usage["completion_tokens"] if usage else pieces
    return first or 0.0, tokens, time.perf_counter() - start


def load(port, clients, requests, tokens):
    results, lock = [], threading.Lock()

    def client(i):
        for r in range(requests):
            got = stream(port, f"Write a short note about topic {i}-{r}.", tokens)
            with lock:
                results.append(got)

    start = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    ttft = sorted(r[0] for r in results)
    return (sum(r[1] for r in results) / wall, statistics.median(ttft),
            ttft[min(len(ttft) - 1, int(0.99 * len(ttft)))])


def wait_ready(port, proc):
    for _ in range(1200):
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with {proc.returncode}")
        try:
            stream(port, "Hi", 2)
            return
        except (OSError, http.client.HTTPException, KeyError, ValueError):
            time.sleep(0.1)
    raise RuntimeError("the server did not come up")


def measure(name, command, port, args):
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_ready(port, proc)
        single = [stream(port, "Write a short note about topic 0.", args.tokens) for _ in range(3)]
        one = statistics.median(t / s for _, t, s in single)
        total, ttft_med, ttft_p99 = load(port, args.clients, args.requests, args.tokens)
        print(f"{name:<22} one client {one:7.1f} tok/s | {args.clients} clients: "
              f"{total:7.1f} tok/s aggregate ({total / one:4.1f}x), time to first token "
              f"median {ttft_med * 1e3:7.1f} ms, p99 {ttft_p99 * 1e3:7.1f} ms", flush=True)
    finally:
        proc.terminate()
        proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, nargs="+", default=[8, 1])
    ap.add_argument("--weights", choices=["int4", "int4-u8"], default="int4",
                    help="the conversion (int4-u8: onnxruntime-genai's CPU int4 layout)")
    ap.add_argument("--llama-cpp", action="store_true",
                    help="also llama-cpp-python's server on the GGUF")
    args = ap.parse_args()
    from nxrt.genai.convert import convert_gguf

    gguf = zoo._fetcher().fetch_source(zoo.get_entry("smollm2_135m_int4"), zoo.cache_dir())
    folder = convert_gguf(gguf, os.path.join(tempfile.mkdtemp(), "smollm2"), weights=args.weights)
    print(f"SmolLM2-135M {args.weights}, {args.threads} thread(s), {args.tokens} tokens per request, "
          f"{args.clients} clients x {args.requests} requests, greedy")
    for batch in args.batch:
        port = free_port()
        measure(f"nxrt serve --batch {batch}",
                [NXRT, "serve", folder, "--port", str(port), "--batch", str(batch),
                 "--max-queue", str(4 * args.clients), "-t", str(args.threads)], port, args)
    if args.llama_cpp:
        port = free_port()
        measure("llama.cpp server",
                [sys.executable, "-m", "llama_cpp.server", "--model", gguf, "--host",
                 "127.0.0.1", "--port", str(port), "--n_threads", str(args.threads),
                 "--n_threads_batch", str(args.threads), "--n_ctx", "2048",
                 # By default a new request cuts the running one short; here they queue.
                 "--interrupt_requests", "False"], port, args)


if __name__ == "__main__":
    main()
