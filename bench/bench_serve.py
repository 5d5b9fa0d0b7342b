"""`nxrt serve` under load: aggregate decode throughput and time to first token of
concurrent streaming clients, with continuous batching (--batch N) and without (--batch 1),
next to one client alone. SmolLM2-135M-Instruct int4 converted from the zoo's GGUF.

  PYTHONPATH=python .venv/bin/python bench/bench_serve.py [--clients 32] [--requests 2]
      [--tokens 64] [--threads 1] [--batch 8 1]
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
    first, usage = None, None
    for line in res:
        if not line.startswith(b"data: ") or line.strip() == b"data: [DONE]":
            continue
        event = json.loads(line[6:])
        if first is None and event["choices"] and event["choices"][0]["text"]:
            first = time.perf_counter() - start
        usage = event.get("usage") or usage
    conn.close()
    return first or 0.0, usage["completion_tokens"], time.perf_counter() - start


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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--clients", type=int, default=32)
    ap.add_argument("--requests", type=int, default=2)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, nargs="+", default=[8, 1])
    args = ap.parse_args()
    from nxrt.genai.convert import convert_gguf

    gguf = zoo._fetcher().fetch_source(zoo.get_entry("smollm2_135m_int4"), zoo.cache_dir())
    folder = convert_gguf(gguf, os.path.join(tempfile.mkdtemp(), "smollm2"), weights="int4")
    print(f"nxrt serve, SmolLM2-135M int4, {args.threads} thread(s), {args.tokens} tokens per "
          f"request, {args.clients} clients x {args.requests} requests")
    for batch in args.batch:
        port = free_port()
        proc = subprocess.Popen([NXRT, "serve", folder, "--port", str(port), "--batch",
                                 str(batch), "--max-queue", str(4 * args.clients), "-t",
                                 str(args.threads)], stderr=subprocess.DEVNULL)
        try:
            for _ in range(200):
                try:
                    stream(port, "Hi", 2)
                    break
                except OSError:
                    time.sleep(0.1)
            single = [stream(port, "Write a short note about topic 0.", args.tokens)
                      for _ in range(3)]
            one = statistics.median(t / s for _, t, s in single)
            total, ttft_med, ttft_p99 = load(port, args.clients, args.requests, args.tokens)
            print(f"--batch {batch:<3} one client {one:7.1f} tok/s | {args.clients} clients: "
                  f"{total:7.1f} tok/s aggregate ({total / one:4.1f}x), time to first token "
                  f"median {ttft_med * 1e3:7.1f} ms, p99 {ttft_p99 * 1e3:7.1f} ms")
        finally:
            proc.terminate()
            proc.wait()


if __name__ == "__main__":
    main()
