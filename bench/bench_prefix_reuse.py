"""`nxrt serve` prefix reuse: the latency of a chat's second turn when the server still
holds the first turn's cache, against the same request on a fresh server (nothing cached).
SmolLM2-135M-Instruct int4 converted from the zoo's GGUF; a long system prompt (about 480
tokens) so the prompt's run dominates; one token generated, so the latency is the prompt.

  PYTHONPATH=python .venv/bin/python bench/bench_prefix_reuse.py [--rounds 3] [--batch 8]
"""
import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import zoo  # noqa: E402
from bench_serve import NXRT, free_port  # noqa: E402

SYSTEM = " ".join(f"Rule {i}: answer briefly and politely, citing facts about topic number {i}."
                  for i in range(25))


class Server:
    def __init__(self, folder, batch):
        self.port = free_port()
        self.proc = subprocess.Popen([NXRT, "serve", folder, "--port", str(self.port), "--batch",
                                      str(batch)], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        for _ in range(300):
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=1)
                conn.request("GET", "/health")
                conn.getresponse().read()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("nxrt serve did not start")

    def chat(self, messages, max_tokens):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        start = time.perf_counter()
        conn.request("POST", "/v1/chat/completions",
                     json.dumps({"messages": messages, "max_tokens": max_tokens,
                                 "temperature": 0}), {"Content-Type": "application/json"})
        body = json.loads(conn.getresponse().read())
        return time.perf_counter() - start, body

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    from nxrt.genai.convert import convert_gguf

    gguf = zoo._fetcher().fetch_source(zoo.get_entry("smollm2_135m_int4"), zoo.cache_dir())
    folder = convert_gguf(gguf, os.path.join(tempfile.mkdtemp(), "smollm2"), weights="int4")
    turn1 = [{"role": "system", "content": SYSTEM},
             {"role": "user", "content": "What is the capital of France?"}]
    reused, fresh = [], []
    for _ in range(args.rounds):
        server = Server(folder, args.batch)
        try:
            _, first = server.chat(turn1, 16)
            turn2 = turn1 + [{"role": "assistant",
                              "content": first["choices"][0]["message"]["content"]},
                             {"role": "user", "content": "And of Italy?"}]
            seconds, body = server.chat(turn2, 1)
            reused.append(seconds)
            usage = body["usage"]
        finally:
            server.stop()
        server = Server(folder, args.batch)
        try:
            seconds, body = server.chat(turn2, 1)
            fresh.append(seconds)
            assert body["usage"]["prompt_tokens_details"]["cached_tokens"] == 0
        finally:
            server.stop()
    a, b = statistics.median(reused), statistics.median(fresh)
    print(f"second turn, {usage['prompt_tokens']} prompt tokens, --batch {args.batch}, median of "
          f"{args.rounds}: {a * 1e3:.1f} ms with {usage['prompt_tokens_details']['cached_tokens']} "
          f"cached, {b * 1e3:.1f} ms on a fresh server ({b / a:.1f}x)")


if __name__ == "__main__":
    main()
