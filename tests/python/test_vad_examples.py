"""The streaming examples examples/vad_stream.c (C API) and examples/vad_stream.cpp (C++
API): Silero VAD v5 over a WAV of espeak-ng speech with silence around it; the printed
segments must cover the speech and not the silence."""
import os
import re
import shutil
import struct
import subprocess
import wave

import numpy as np
import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("NXRT_BUILD_DIR", os.path.join(ROOT, "build"))
SILERO = os.path.normpath(os.path.join(ROOT, "..", "shared", "models", "silero_vad_v5.onnx"))
EXAMPLES = {"c": os.path.join(BUILD, "examples", "vad_stream_c"),
            "cpp": os.path.join(BUILD, "examples", "vad_stream_cpp")}
RATE = 16000
SILENCE_S = 1.0
TOLERANCE_S = 0.3
TEXT = ("Voice activity detection finds the parts of a recording where somebody speaks. "
        "This sentence is spoken by a synthetic voice.")


def example(kind):
    path = EXAMPLES[kind]
    if not os.path.exists(path):
        pytest.skip(f"{path} is not built (scripts/build.sh builds it with libnxrt)")
    return path


def write_wav(path, samples, rate=RATE, channels=1):
    with wave.open(str(path), "wb") as w:
        w.setnchannels(channels)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(np.asarray(samples, np.int16).tobytes())


def read_wav(path):
    with wave.open(str(path), "rb") as w:
        assert (w.getnchannels(), w.getsampwidth()) == (1, 2)
        return np.frombuffer(w.readframes(w.getnframes()), np.int16), w.getframerate()


@pytest.fixture(scope="module")
def speech_wav(tmp_path_factory):
    """16 kHz mono 16-bit speech with 1 s of silence before and after; returns (path, speech
    start s, speech end s) where the bounds come from the signal itself (espeak-ng adds
    short pauses of its own)."""
    if not shutil.which("espeak-ng"):
        pytest.skip("espeak-ng is not installed (scripts/setup.sh installs it: apt-get install espeak-ng)")
    folder = tmp_path_factory.mktemp("vad")
    raw = folder / "espeak.wav"
    subprocess.run(["espeak-ng", "-w", str(raw), TEXT], check=True, capture_output=True)
    out = folder / "speech16k.wav"
    if shutil.which("sox"):
        subprocess.run(["sox", str(raw), "-r", str(RATE), "-c", "1", "-b", "16", str(out),
                        "pad", str(SILENCE_S), str(SILENCE_S)], check=True, capture_output=True)
        samples, _ = read_wav(out)
    else:  # resample (linear interpolation is plenty for VAD) and pad in Python
        speech, rate = read_wav(raw)
        t = np.arange(int(len(speech) * RATE / rate)) * (rate / RATE)
        speech = np.interp(t, np.arange(len(speech)), speech.astype(np.float64)).astype(np.int16)
        pad = np.zeros(int(SILENCE_S * RATE), np.int16)
        samples = np.concatenate([pad, speech, pad])
        write_wav(out, samples)
    loud = np.nonzero(np.abs(samples.astype(np.int32)) > 0.05 * np.abs(samples.astype(np.int32)).max())[0]
    return out, loud[0] / RATE, loud[-1] / RATE


def run_example(kind, *args):
    return subprocess.run([example(kind), *map(str, args)], capture_output=True, text=True, timeout=120)


def segments_of(output):
    return [(float(a), float(b)) for a, b in re.findall(r"^segment: ([\d.]+) s -> ([\d.]+) s$", output, re.M)]


@pytest.mark.parametrize("kind", ["c", "cpp"])
def test_segments_cover_speech_not_silence(kind, speech_wav):
    path, speech_start, speech_end = speech_wav
    assert speech_start > SILENCE_S - 0.05 and speech_end > speech_start + 2.0
    proc = run_example(kind, SILERO, path)
    assert proc.returncode == 0, proc.stderr
    segs = segments_of(proc.stdout)
    assert segs, proc.stdout
    assert abs(segs[0][0] - speech_start) <= TOLERANCE_S, (segs, speech_start)
    assert abs(segs[-1][1] - speech_end) <= TOLERANCE_S, (segs, speech_end)
    for start, end in segs:  # nothing detected in the silence around the speech
        assert start < end
        assert start >= speech_start - TOLERANCE_S and end <= speech_end + TOLERANCE_S, segs
    for (_, end), (start, _) in zip(segs, segs[1:]):
        assert start >= end, segs
    covered = sum(end - start for start, end in segs)
    assert covered >= 0.7 * (speech_end - speech_start), segs
    assert re.search(rf"done: {len(segs)} speech segment\(s\)", proc.stdout)


def test_c_and_cpp_agree(speech_wav):
    path = speech_wav[0]
    c = run_example("c", SILERO, path)
    cpp = run_example("cpp", SILERO, path)
    assert c.returncode == 0 and cpp.returncode == 0, c.stderr + cpp.stderr
    assert segments_of(c.stdout) == segments_of(cpp.stdout)


@pytest.mark.parametrize("kind", ["c", "cpp"])
def test_silence_and_noise_give_no_segments(kind, tmp_path):
    rng = np.random.default_rng(0)
    quiet = (rng.standard_normal(RATE * 3) * 30).astype(np.int16)  # -60 dBFS hiss
    write_wav(tmp_path / "quiet.wav", quiet)
    proc = run_example(kind, SILERO, tmp_path / "quiet.wav")
    assert proc.returncode == 0, proc.stderr
    assert segments_of(proc.stdout) == []
    assert "done: 0 speech segment(s)" in proc.stdout


def riff(chunks):
    body = b"WAVE" + b"".join(tag + struct.pack("<I", len(data)) + data + (b"\0" if len(data) % 2 else b"")
                              for tag, data in chunks)
    return b"RIFF" + struct.pack("<I", len(body)) + body


def fmt_chunk(tag=1, channels=1, rate=RATE, bits=16, extensible_subformat=None):
    block = channels * bits // 8
    data = struct.pack("<HHIIHH", tag, channels, rate, rate * block, block, bits)
    if extensible_subformat is not None:
        guid_tail = b"\x00\x00\x00\x00\x10\x00\x80\x00\x00\xaa\x00\x38\x9b\x71"
        data += struct.pack("<HHI", 22, bits, 4) + struct.pack("<H", extensible_subformat) + guid_tail
    return data


@pytest.mark.parametrize("kind", ["c", "cpp"])
def test_wav_reader_walks_chunks(kind, tmp_path):
    # Extra chunks (odd-sized LIST before fmt, fact between fmt and data) and
    # WAVE_FORMAT_EXTENSIBLE PCM are all valid 16 kHz mono 16-bit files.
    samples = np.zeros(RATE, np.int16).tobytes()
    files = {
        "list.wav": riff([(b"LIST", b"INFOabc"), (b"fmt ", fmt_chunk()), (b"fact", b"\0\0\0\0"),
                          (b"data", samples)]),
        "extensible.wav": riff([(b"fmt ", fmt_chunk(tag=0xFFFE, extensible_subformat=1)), (b"data", samples)]),
    }
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        proc = run_example(kind, SILERO, tmp_path / name)
        assert proc.returncode == 0, (name, proc.stderr)
        assert "1.000 s, 32 frames" in proc.stdout, proc.stdout


@pytest.mark.parametrize("kind", ["c", "cpp"])
def test_errors_are_clear(kind, tmp_path):
    samples = np.zeros(RATE, np.int16)
    write_wav(tmp_path / "22k.wav", np.zeros(22050, np.int16), rate=22050)
    write_wav(tmp_path / "stereo.wav", np.zeros(2 * RATE, np.int16), channels=2)
    (tmp_path / "float.wav").write_bytes(riff([(b"fmt ", fmt_chunk(tag=3, bits=32)), (b"data", b"\0" * 64)]))
    (tmp_path / "nodata.wav").write_bytes(riff([(b"fmt ", fmt_chunk())]))
    (tmp_path / "text.wav").write_text("hello")
    write_wav(tmp_path / "ok.wav", samples)
    cases = [
        ((SILERO, tmp_path / "22k.wav"), r"holds 22050 Hz, 1 channel\(s\), 16-bit audio; expected 16000 Hz mono 16-bit"),
        ((SILERO, tmp_path / "stereo.wav"), r"2 channel\(s\)"),
        ((SILERO, tmp_path / "float.wav"), r"is not PCM \(format tag 3\)"),
        ((SILERO, tmp_path / "nodata.wav"), r"has no data chunk"),
        ((SILERO, tmp_path / "text.wav"), r"is not a RIFF/WAVE file"),
        ((SILERO, tmp_path / "missing.wav"), r"cannot open"),
        ((tmp_path / "missing.onnx", tmp_path / "ok.wav"), r"loading the model: .*missing\.onnx"),
    ]
    for args, pattern in cases:
        proc = run_example(kind, *args)
        assert proc.returncode != 0, args
        assert re.search(pattern, proc.stderr), (args, proc.stderr)
    proc = run_example(kind)
    assert proc.returncode == 2 and "usage:" in proc.stderr
