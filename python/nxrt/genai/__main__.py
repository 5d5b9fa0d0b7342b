"""python -m nxrt.genai: convert a GGUF file, or generate text from a model folder or GGUF.

  python -m nxrt.genai convert MODEL.gguf OUT_DIR [--weights fp32|int4|int4-u8] [--attention gqa|ops]
  python -m nxrt.genai generate MODEL --prompt TEXT [--stream] [--max-tokens N]
        [--temperature T] [--top-p P] [--top-k K] [--seed S] [--threads N]

MODEL is a folder (genai_config.json, model.onnx, tokenizer.json) or a .gguf file
(converted once into ~/.cache/nxrt-genai, or $NXRT_GENAI_CACHE). Prints the prompt's
token count, the time to the first token and the decode speed after the text.
"""

import argparse
import os
import sys


def _engine(model, threads, weights):
    from .engine import Engine

    if os.path.isdir(model):
        return Engine.from_dir(model, threads=threads)
    return Engine.from_gguf(model, weights=weights, threads=threads)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m nxrt.genai", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    c = sub.add_parser("convert", help="GGUF file to an ONNX model folder")
    c.add_argument("gguf")
    c.add_argument("out_dir")
    c.add_argument("--weights", choices=["fp32", "int4", "int4-u8"], default="int4")
    c.add_argument("--attention", choices=["gqa", "ops"], default="gqa",
                   help="GroupQueryAttention with a cache updated in place (default), or "
                        "standard ONNX ops")
    g = sub.add_parser("generate", help="generate text from a prompt")
    g.add_argument("model", help="model folder or .gguf file")
    g.add_argument("--prompt", required=True)
    g.add_argument("--stream", action="store_true")
    g.add_argument("--max-tokens", type=int, default=128)
    g.add_argument("--temperature", type=float, default=None)
    g.add_argument("--top-p", type=float, default=None)
    g.add_argument("--top-k", type=int, default=None)
    g.add_argument("--seed", type=int, default=None)
    g.add_argument("--threads", type=int, default=None)
    g.add_argument("--weights", choices=["fp32", "int4", "int4-u8"], default="int4",
                   help="weights of the conversion when MODEL is a .gguf file")
    args = ap.parse_args(argv)
    try:
        if args.command == "convert":
            from .convert import convert_gguf

            convert_gguf(args.gguf, args.out_dir, weights=args.weights, attention=args.attention)
            print(f"wrote {args.out_dir}")
            return 0
        engine = _engine(args.model, args.threads, args.weights)
        kw = dict(max_tokens=args.max_tokens, temperature=args.temperature, top_p=args.top_p,
                  top_k=args.top_k, seed=args.seed)
        if args.stream:
            for piece in engine.stream(args.prompt, **kw):
                print(piece, end="", flush=True)
            print()
            prompt_tokens, n, t = (engine.last.prompt_tokens, len(engine.last.tokens),
                                   engine.last.timings)
        else:
            r = engine.generate(args.prompt, **kw)
            print(r.text)
            prompt_tokens, n, t = r.usage["prompt_tokens"], r.usage["completion_tokens"], r.timings
        print(f"[{prompt_tokens} prompt tokens, {n} generated; time to first token "
              f"{t['time_to_first_token'] * 1e3:.1f} ms; {t['tokens_per_second']:.1f} tokens/s]",
              file=sys.stderr)
        return 0
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
