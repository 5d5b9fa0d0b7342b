"""Real libraries written for onnxruntime, run unchanged on nxrt: each runs twice in its
own process, once on onnxruntime and once after nxrt.install_as_onnxruntime(), on inputs
made here, and the results must agree."""

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

import nxrt

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _run_script(script, use_nxrt, tmp_path):
    prelude = ("import nxrt; nxrt.install_as_onnxruntime()\n"
               "import onnxruntime; assert onnxruntime is nxrt, 'onnxruntime is not nxrt'\n"
               if use_nxrt else "")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    out = subprocess.run([sys.executable, "-c", prelude + script, str(tmp_path)], env=env,
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _magika_inputs(directory):
    files = {
        "notes.txt": b"Meeting notes\nThe quarterly numbers are in; revenue grew by four percent.\n" * 4,
        "script.py": b"import os\n\n\ndef main():\n    for name in os.listdir('.'):\n        print(name)\n\n\n"
                     b"if __name__ == '__main__':\n    main()\n",
        "data.json": json.dumps({"items": [{"id": i, "name": f"item {i}", "tags": ["a", "b"]}
                                           for i in range(20)]}, indent=2).encode(),
        "table.csv": b"id,name,price\n" + b"".join(b"%d,item %d,%d.99\n" % (i, i, i) for i in range(40)),
        "page.html": b"<!DOCTYPE html>\n<html><head><title>Test</title></head><body>"
                     b"<h1>Hello</h1><p>A paragraph of text.</p></body></html>\n" * 3,
        "style.css": b"body { margin: 0; padding: 0; }\nh1 { color: #333; font-size: 2em; }\n" * 5,
        "code.c": b"#include <stdio.h>\n\nint main(void) {\n  printf(\"hello\\n\");\n  return 0;\n}\n" * 3,
        "empty.bin": b"",
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as z:
        z.writestr("a.txt", "some text " * 100)
    files["archive.zip"] = buffer.getvalue()
    for name, data in files.items():
        with open(os.path.join(directory, name), "wb") as f:
            f.write(data)
    return sorted(files)


MAGIKA_SCRIPT = """
import json, os, sys
from magika import Magika
d = sys.argv[1]
m = Magika()
out = {}
for name in sorted(os.listdir(d)):
    r = m.identify_path(os.path.join(d, name))
    out[name] = [str(r.output.label), float(r.score)]
print(json.dumps(out))
"""


def test_magika_same_labels_and_scores(tmp_path):
    pytest.importorskip("magika")
    names = _magika_inputs(tmp_path)
    want = _run_script(MAGIKA_SCRIPT, False, tmp_path)
    got = _run_script(MAGIKA_SCRIPT, True, tmp_path)
    assert sorted(got) == names
    for name in names:
        assert got[name][0] == want[name][0], (name, got[name], want[name])
        assert abs(got[name][1] - want[name][1]) < 1e-4, (name, got[name], want[name])


def test_install_and_uninstall_as_onnxruntime():
    import onnxruntime as real

    nxrt.install_as_onnxruntime()
    try:
        import onnxruntime
        from onnxruntime.capi.onnxruntime_pybind11_state import InvalidArgument

        assert onnxruntime is nxrt
        assert InvalidArgument is nxrt.InvalidArgument
    finally:
        nxrt.uninstall_as_onnxruntime()
    import onnxruntime

    assert onnxruntime is real


RAPIDOCR_SCRIPT = """
import json
import numpy as np
from PIL import Image, ImageDraw, ImageFont
from rapidocr_onnxruntime import RapidOCR
img = Image.new("RGB", (640, 200), "white")
draw = ImageDraw.Draw(img)
font = ImageFont.load_default(size=36)
draw.text((20, 20), "Hello nxrt 2026", fill="black", font=font)
draw.text((20, 110), "Invoice total: 42.50 EUR", fill="black", font=font)
result, _ = RapidOCR()(np.array(img)[:, :, ::-1].copy())
print(json.dumps([[r[1], float(r[2]), np.asarray(r[0]).tolist()] for r in (result or [])]))
"""


def test_rapidocr_same_text_and_boxes(tmp_path):
    pytest.importorskip("rapidocr_onnxruntime")
    pytest.importorskip("PIL")
    want = _run_script(RAPIDOCR_SCRIPT, False, tmp_path)
    got = _run_script(RAPIDOCR_SCRIPT, True, tmp_path)
    assert len(want) == 2, want  # the rendered lines were found at all
    assert [g[0] for g in got] == [w[0] for w in want]
    for g, w in zip(got, want):
        assert abs(g[1] - w[1]) < 1e-3, (g, w)
        assert g[2] == w[2], (g, w)  # the detected boxes, in pixels


SILERO_SCRIPT = """
import json, sys, wave
import numpy as np
import torch
from silero_vad import get_speech_timestamps, load_silero_vad
with wave.open(sys.argv[1] + "/speech.wav") as w:
    audio = np.frombuffer(w.readframes(w.getnframes()), np.int16).astype(np.float32) / 32768
model = load_silero_vad(onnx=True)
wav = torch.from_numpy(audio)
stamps = get_speech_timestamps(wav, model, sampling_rate=16000)
model.reset_states()
probs = [float(model(wav[i:i + 512], 16000)) for i in range(0, len(wav) - 511, 512)]
print(json.dumps({"stamps": [[s["start"], s["end"]] for s in stamps], "probs": probs}))
"""


def test_silero_vad_same_speech_timestamps(tmp_path):
    pytest.importorskip("silero_vad")
    pytest.importorskip("torch")
    for tool in ("espeak-ng", "sox"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (scripts/setup.sh installs it)")
    # Two phrases of espeak-ng speech, 16 kHz, with silence around and between them.
    parts = []
    for i, text in enumerate(["The weather is nice today.", "Please call me back tomorrow."]):
        raw = tmp_path / f"raw{i}.wav"
        subprocess.run(["espeak-ng", "-w", str(raw), text], check=True, capture_output=True)
        parts.append(str(raw))
    subprocess.run(["sox", parts[0], parts[1], "-r", "16000", "-c", "1", "-b", "16",
                    str(tmp_path / "joined.wav")], check=True, capture_output=True)
    subprocess.run(["sox", str(tmp_path / "joined.wav"), str(tmp_path / "speech.wav"), "pad", "1",
                    "1"], check=True, capture_output=True)
    want = _run_script(SILERO_SCRIPT, False, tmp_path)
    got = _run_script(SILERO_SCRIPT, True, tmp_path)
    assert len(want["stamps"]) >= 2, want["stamps"]  # both phrases were found at all
    assert got["stamps"] == want["stamps"]
    np.testing.assert_allclose(got["probs"], want["probs"], atol=1e-4)
