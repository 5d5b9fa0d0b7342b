"""The real models in ../shared/models, run by nxrt and onnxruntime on the same inputs."""

import os

import numpy as np
import pytest

import nxrt

ort = pytest.importorskip("onnxruntime")

MODELS = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "models"))
RTOL, ATOL = 1e-4, 1e-5


def _sessions(name):
    path = os.path.join(MODELS, name)
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return nxrt.InferenceSession(path), ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def _audio(samples, seed=0, sr=16000):
    """A speech-like signal: voiced harmonics with an envelope, plus noise and silence."""
    rng = np.random.default_rng(seed)
    t = np.arange(samples) / sr
    f0 = 120 + 30 * np.sin(2 * np.pi * 0.5 * t)
    voiced = sum(np.sin(2 * np.pi * k * np.cumsum(f0) / sr) / k for k in range(1, 8))
    envelope = (np.sin(2 * np.pi * 1.5 * t) > -0.2).astype(np.float64)
    x = 0.3 * voiced * envelope + 0.01 * rng.standard_normal(samples)
    return x.astype(np.float32)


def _check(nx_outputs, ort_outputs, label):
    assert len(nx_outputs) == len(ort_outputs)
    for a, b in zip(nx_outputs, ort_outputs):
        assert a.dtype == b.dtype and a.shape == b.shape, label
        np.testing.assert_allclose(a, b, rtol=RTOL, atol=ATOL, err_msg=label)


def test_silero_vad_v5_stream():
    nx, rt = _sessions("silero_vad_v5.onnx")
    audio = _audio(512 * 100)
    state_nx = state_rt = np.zeros((2, 1, 128), np.float32)
    sr = np.array(16000, np.int64)
    for i in range(100):
        frame = audio[i * 512:(i + 1) * 512][None, :]
        out_nx = nx.run(None, {"input": frame, "state": state_nx, "sr": sr})
        out_rt = rt.run(None, {"input": frame, "state": state_rt, "sr": sr})
        _check(out_nx, out_rt, f"frame {i}")
        state_nx, state_rt = out_nx[1], out_rt[1]


def test_silero_vad_v5_8khz_and_batch():
    nx, rt = _sessions("silero_vad_v5.onnx")
    audio = _audio(256 * 3, seed=1, sr=8000).reshape(3, 256)
    feeds = {"input": audio, "state": np.zeros((2, 3, 128), np.float32),
             "sr": np.array(8000, np.int64)}
    _check(nx.run(None, feeds), rt.run(None, feeds), "8 kHz batch of 3")


def test_silero_vad_legacy_stream():
    nx, rt = _sessions("silero_vad_legacy.onnx")
    audio = _audio(512 * 20, seed=2)
    h = c = np.zeros((2, 1, 64), np.float32)
    hr = cr = h
    sr = np.array(16000, np.int64)
    for i in range(20):
        frame = audio[i * 512:(i + 1) * 512][None, :]
        out_nx = nx.run(None, {"input": frame, "sr": sr, "h": h, "c": c})
        out_rt = rt.run(None, {"input": frame, "sr": sr, "h": hr, "c": cr})
        _check(out_nx, out_rt, f"frame {i}")
        h, c = out_nx[1], out_nx[2]
        hr, cr = out_rt[1], out_rt[2]


def test_openwakeword_melspectrogram():
    nx, rt = _sessions("oww_melspectrogram.onnx")
    name = nx.get_inputs()[0].name
    for seed in range(3):
        feeds = {name: (_audio(1280 * 4, seed=seed) * 32767 / 4).reshape(1, -1)}
        _check(nx.run(None, feeds), rt.run(None, feeds), f"seed {seed}")


def test_ppocr_text_detection():
    nx, rt = _sessions("ppocr_v4_det.onnx")
    rng = np.random.default_rng(3)
    h = w = 256
    yy, xx = np.mgrid[0:h, 0:w]
    image = np.stack([np.sin(xx / 7.0) * np.cos(yy / 11.0), (xx % 32 < 4) * 1.0,
                      rng.random((h, w))]).astype(np.float32)[None]
    image = (image - 0.5) / 0.25
    feeds = {nx.get_inputs()[0].name: image}
    _check(nx.run(None, feeds), rt.run(None, feeds), "256x256 image")


def test_intra_op_threads_give_the_same_results():
    # 2 intra-op threads start one worker with the session and split the convolutions;
    # the result matches the serial session's.
    tasks = lambda: len(os.listdir("/proc/self/task"))
    path = os.path.join(MODELS, "ppocr_v4_det.onnx")
    x = np.random.default_rng(3).random((1, 3, 224, 224), dtype=np.float32)
    serial = nxrt.InferenceSession(path).run(None, {"x": x})[0]
    before = tasks()
    o = nxrt.SessionOptions()
    o.intra_op_num_threads = 2
    s = nxrt.InferenceSession(path, o)
    assert tasks() == before + 1
    np.testing.assert_allclose(s.run(None, {"x": x})[0], serial, rtol=1e-4, atol=1e-5)
    del s
    assert tasks() == before
