"""ONNX ImageDecoder: images Pillow encodes (the ONNX reference decodes with Pillow) in
every format, mode and size nxrt reads come out as Pillow decodes them; malformed streams
fail with an error naming the format and what is wrong."""
import io

import numpy as np
import pytest
from onnx import TensorProto, helper

import nxrt

PIL = pytest.importorskip("PIL.Image")


def _session(pixel_format="RGB"):
    node = helper.make_node("ImageDecoder", ["x"], ["y"], name="dec", pixel_format=pixel_format)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.UINT8,
                                                                          [None])],
                              [helper.make_tensor_value_info("y", TensorProto.UINT8, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    return nxrt.InferenceSession(model.SerializeToString())


def _encode(image, fmt, **options):
    buf = io.BytesIO()
    image.save(buf, format=fmt, **options)
    return np.frombuffer(buf.getvalue(), np.uint8)


def _image(mode, width=37, height=23, seed=0):
    rng = np.random.default_rng(seed)
    channels = {"RGB": 3, "RGBA": 4, "L": 1}[mode]
    pixels = rng.integers(0, 256, (height, width, channels), dtype=np.uint8)
    # Smooth parts too, so lossy codecs have something they keep.
    pixels[:, : width // 2] = (np.arange(width // 2) * 7 % 256).astype(np.uint8)[None, :, None]
    return PIL.fromarray(pixels[..., 0] if channels == 1 else pixels, mode)


CASES = [
    ("PNG", "RGB", {}), ("PNG", "L", {}), ("PNG", "RGBA", {}), ("JPEG", "RGB", {"quality": 90}),
    ("JPEG", "L", {}), ("BMP", "RGB", {}), ("BMP", "L", {}), ("PPM", "RGB", {}), ("PPM", "L", {}),
    ("TIFF", "RGB", {}), ("TIFF", "RGB", {"compression": "tiff_lzw"}), ("WEBP", "RGB", {}),
    ("WEBP", "RGB", {"lossless": True}), ("JPEG2000", "RGB", {}),
]


@pytest.mark.parametrize("fmt,mode,options", CASES,
                         ids=[f"{f}-{m}-{'-'.join(o) or 'default'}" for f, m, o in CASES])
@pytest.mark.parametrize("pixel_format", ["RGB", "BGR", "Grayscale"])
def test_decodes_as_pillow_does(fmt, mode, options, pixel_format):
    data = _encode(_image(mode), fmt, **options)
    reference = PIL.open(io.BytesIO(data.tobytes()))
    if pixel_format == "Grayscale":
        want = np.asarray(reference.convert("L"))[..., None]
    else:
        want = np.asarray(reference.convert("RGB"))  # (alpha dropped, gray widened)
        if pixel_format == "BGR":
            want = want[..., ::-1]
    (got,) = _session(pixel_format).run(None, {"x": data})
    assert got.dtype == np.uint8 and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


def test_ascii_pnm_with_a_small_maximum():
    data = np.frombuffer(b"P3\n# a comment\n2 1\n3\n0 1 2  3 3 3\n", np.uint8)
    (got,) = _session().run(None, {"x": data})
    assert got.tolist() == [[[0, 85, 170], [255, 255, 255]]]


def test_palette_bmp_top_down():
    image = _image("RGB").convert("P", palette=PIL.Palette.ADAPTIVE, colors=16)
    data = _encode(image, "BMP")
    (got,) = _session().run(None, {"x": data})
    np.testing.assert_array_equal(got, np.asarray(image.convert("RGB")))


@pytest.mark.parametrize("data,message", [
    (b"\xff\xd8\xff\xe0" + b"\0" * 20, "JPEG: "),
    (b"\x89PNG\r\n\x1a\n" + b"\0" * 10, "PNG: "),
    (b"BM" + b"\0" * 10, "BMP: truncated header"),
    (b"P6\n100000 100000\n255\n", "PNM: image of 100000 x 100000 pixels is empty or too large"),
    (b"P6\n4 4\n255\n\0\0\0", "PNM: samples truncated"),
    (b"GIF89a\0\0", "no JPEG, PNG, TIFF, WebP, JPEG 2000, BMP or PNM image"),
    (b"II*\0\x08\0\0\0", "TIFF: "),
    (b"RIFF\0\0\0\0WEBPVP8 ", "WebP: "),
    (b"\xff\x4f\xff\x51" + b"\0" * 8, "JPEG 2000: "),
])
def test_malformed_streams_are_named(data, message):
    with pytest.raises((nxrt.InvalidArgument, nxrt.capi.onnxruntime_pybind11_state.NotImplemented),
                       match=message):
        _session().run(None, {"x": np.frombuffer(data, np.uint8)})


@pytest.mark.parametrize("fmt,mode,options", CASES,
                         ids=[f"{f}-{m}-{'-'.join(o) or 'default'}" for f, m, o in CASES])
def test_truncated_images_are_refused(fmt, mode, options):
    # As Pillow refuses them: no padded or partial pixels (libjpeg would pad with gray).
    data = _encode(_image(mode), fmt, **options)
    name = {"PPM": "PNM", "JPEG2000": "JPEG 2000", "WEBP": "WebP"}.get(fmt, fmt)
    for cut in (len(data) // 3, len(data) - 7):
        with pytest.raises(nxrt.InvalidArgument, match=f"{name}: "):
            _session().run(None, {"x": data[:cut]})
