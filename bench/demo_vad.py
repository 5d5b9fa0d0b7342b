"""nxrt's main job on a real model: Silero VAD over a stream of 32 ms audio frames.

The model comes from the PyPI package silero-vad (its wheel ships silero_vad.onnx; only
the wheel is downloaded, nothing from a model hub), or from --model. The audio is a
synthetic utterance with silence around it. Prints the speech probability timeline from
nxrt, checks it against onnxruntime frame by frame, and times both in one process.
"""

import argparse
import glob
import os
import subprocess
import sys
import zipfile

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
import harness  # noqa: E402

import nxrt  # noqa: E402

CACHE = os.path.join(os.path.dirname(__file__), "..", ".cache", "models")


def fetch_model():
    """silero_vad.onnx from the silero-vad wheel on PyPI (cached under .cache/)."""
    os.makedirs(CACHE, exist_ok=True)
    target = os.path.join(CACHE, "silero_vad.onnx")
    if os.path.exists(target):
        return target
    wheels = glob.glob(os.path.join(CACHE, "silero_vad-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d", CACHE,
                        "silero-vad"], check=True)
        wheels = glob.glob(os.path.join(CACHE, "silero_vad-*.whl"))
    with zipfile.ZipFile(wheels[0]) as z:
        with z.open("silero_vad/data/silero_vad.onnx") as src, open(target, "wb") as dst:
            dst.write(src.read())
    return target


def spoken(sr=16000):
    """A sentence spoken by espeak-ng (Debian; scripts/setup.sh installs it) with a second
    of silence before and after, resampled to 16 kHz; None when espeak-ng is missing."""
    import shutil
    import tempfile
    import wave

    if not shutil.which("espeak-ng"):
        return None
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "speech.wav")
        text = "Voice activity detection finds the parts of a recording where someone speaks."
        subprocess.run(["espeak-ng", "-w", path, text], check=True, capture_output=True)
        with wave.open(path) as w:
            rate = w.getframerate()
            pcm = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32) / 32768
    t = np.arange(int(len(pcm) * sr / rate)) / sr
    speech = np.interp(t, np.arange(len(pcm)) / rate, pcm).astype(np.float32)
    silence = np.zeros(sr, np.float32)
    return np.concatenate([silence, speech, silence])


def utterance(sr=16000, seconds=4.0, seed=0):
    """Silence, a vowel-like voiced stretch with syllable rhythm, then silence again."""
    rng = np.random.default_rng(seed)
    n = int(sr * seconds)
    t = np.arange(n) / sr
    f0 = 110 + 25 * np.sin(2 * np.pi * 0.7 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    voiced = sum(np.sin(k * phase) * np.exp(-0.25 * k) for k in range(1, 12))
    syllables = 0.5 * (1 + np.sin(2 * np.pi * 4 * t)) ** 2
    gate = ((t > 1.0) & (t < 3.0)).astype(np.float64)
    x = 0.25 * voiced * syllables * gate + 0.002 * rng.standard_normal(n)
    return x.astype(np.float32)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", help="path to a Silero VAD v5 ONNX file")
    args = parser.parse_args()
    path = args.model or fetch_model()
    print(f"model: {os.path.normpath(path)}")

    sess = nxrt.InferenceSession(path)
    print("inputs: " + ", ".join(f"{i.name} {i.type} {i.shape}" for i in sess.get_inputs()))
    audio = spoken()
    if audio is None:
        audio, what = utterance(), "a synthetic voiced signal from 1.0 s to 3.0 s"
    else:
        what = f"espeak-ng speech from 1.0 s to {len(audio) / 16000 - 1:.1f} s"
    frame, context = 512, 64
    sr = np.array(16000, np.int64)
    state = np.zeros((2, 1, 128), np.float32)
    # Like Silero's own wrapper, each 512-sample frame is fed with the previous frame's
    # last 64 samples in front.
    padded = np.concatenate([np.zeros(context, np.float32), audio])
    frames = [padded[s:s + context + frame][None] for s in range(0, len(audio) - frame + 1, frame)]
    probs = []
    for x in frames:
        prob, state = sess.run(None, {"input": x, "state": state, "sr": sr})
        probs.append(float(prob[0, 0]))

    print(f"\nspeech probability per 128 ms (max of 4 frames of 32 ms, | = 0.1); {what}:")
    for i in range(0, len(probs), 4):
        p = max(probs[i:i + 4])
        print(f"  {i * frame / 16000:5.2f} s  {p:5.3f} {'|' * int(round(p * 10))}")

    try:
        import onnxruntime as ort
    except ImportError:
        print("\nonnxruntime not installed: skipping the comparison")
        return
    print("\nnxrt vs onnxruntime (same process, interleaved blocks, 1 intra-op thread):")
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    rt = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    nso = nxrt.SessionOptions()
    nso.intra_op_num_threads = 1
    nx = nxrt.InferenceSession(path, nso)
    state_rt = np.zeros((2, 1, 128), np.float32)
    worst = 0.0
    state_nx = state_rt
    for feed in frames:
        a = nx.run(None, {"input": feed, "state": state_nx, "sr": sr})
        b = rt.run(None, {"input": feed, "state": state_rt, "sr": sr})
        worst = max(worst, float(np.max(np.abs(a[0] - b[0]))))
        state_nx, state_rt = a[1], b[1]
    print(f"  largest probability difference over {len(probs)} frames: {worst:.2e}")
    feeds = {"input": frames[len(frames) // 2], "state": state_rt, "sr": sr}
    result = harness.compare(lambda: nx.run(None, feeds), lambda: rt.run(None, feeds),
                             rounds=40, block=25)
    print("  " + harness.format_row("silero_vad 512-sample frame", 1, result))


if __name__ == "__main__":
    main()
