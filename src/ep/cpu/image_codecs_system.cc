// The image formats that need system libraries (image_codecs.h): JPEG (libjpeg-turbo),
// PNG (libpng), TIFF (libtiff), WebP (libwebp) and JPEG 2000 (openjpeg), each compiled in
// when CMake finds its library. A separate library (nxrt_image_codecs) so that only the
// programs that want them load these libraries: the Python module and the nxrt CLI link it
// and call set_system_image_decoder(decode_with_system_codecs); libnxrt does not (their
// resident pages would push a C API process over its memory budget).
#include <algorithm>
#include <csetjmp>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ep/cpu/image_codecs.h"

#if NXRT_HAVE_JPEG
#include <jpeglib.h>
#endif
#if NXRT_HAVE_PNG
#include <png.h>
#endif
#if NXRT_HAVE_TIFF
#include <tiffio.h>
#endif
#if NXRT_HAVE_WEBP
#include <webp/decode.h>
#endif
#if NXRT_HAVE_OPENJP2
#include <openjpeg.h>
#endif

namespace nxrt::cpu {
namespace {

using Bytes = std::span<const uint8_t>;

[[maybe_unused]] Status missing_codec(const char* format, const char* library) {
  return not_implemented(format, " images need ", library,
                         ", which this build of nxrt was made without");
}

// ---- JPEG (libjpeg-turbo) ----

#if NXRT_HAVE_JPEG
struct JpegErrors {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jpeg_fail(j_common_ptr info) {
  auto* errors = reinterpret_cast<JpegErrors*>(info->err);
  info->err->format_message(info, errors->message);
  longjmp(errors->jump, 1);
}

Expected<DecodedImage> decode_jpeg(Bytes b) {
  jpeg_decompress_struct info;
  JpegErrors errors;
  info.err = jpeg_std_error(&errors.mgr);
  errors.mgr.error_exit = jpeg_fail;
  errors.mgr.output_message = [](j_common_ptr) {};  // warnings: not to stderr
  DecodedImage img;
  if (setjmp(errors.jump)) {
    jpeg_destroy_decompress(&info);
    return invalid_argument("JPEG: ", errors.message);
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, b.data(), static_cast<unsigned long>(b.size()));
  jpeg_read_header(&info, TRUE);
  info.out_color_space = JCS_RGB;
  jpeg_start_decompress(&info);
  if (Status s = check_image_size("JPEG", info.output_height, info.output_width); !s.ok()) {
    jpeg_destroy_decompress(&info);
    return s;
  }
  img.height = info.output_height;
  img.width = info.output_width;
  img.rgb.resize(size_t(img.height * img.width * 3));
  while (info.output_scanline < info.output_height) {
    JSAMPROW row = &img.rgb[size_t(info.output_scanline) * size_t(img.width) * 3];
    jpeg_read_scanlines(&info, &row, 1);
  }
  // libjpeg pads a truncated or corrupt stream with gray and warns; Pillow (the
  // reference) refuses such a file, and so does nxrt rather than return made-up pixels.
  const long warnings = errors.mgr.num_warnings;
  if (warnings == 0) jpeg_finish_decompress(&info);
  jpeg_destroy_decompress(&info);
  if (warnings > 0)
    return invalid_argument("JPEG: the stream is truncated or corrupt (", warnings,
                            " decoder warnings)");
  return img;
}
#endif

// ---- PNG (libpng): palettes expanded, 16 bits cut to 8, alpha dropped, gray to RGB ----

#if NXRT_HAVE_PNG
struct PngSource {
  Bytes bytes;
  size_t pos = 0;
  char message[256] = "";
};

Expected<DecodedImage> decode_png(Bytes b) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  if (!png) return runtime_error("PNG: no memory for the decoder");
  png_infop info = png_create_info_struct(png);
  PngSource source{b};
  DecodedImage img;
  std::vector<png_bytep> rows;
  png_set_error_fn(
      png, &source,
      [](png_structp p, png_const_charp text) {
        auto* s = static_cast<PngSource*>(png_get_error_ptr(p));
        std::snprintf(s->message, sizeof(s->message), "%s", text);
        png_longjmp(p, 1);
      },
      [](png_structp, png_const_charp) {});
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return invalid_argument("PNG: ", source.message);
  }
  png_set_read_fn(png, &source, [](png_structp p, png_bytep out, size_t count) {
    auto* s = static_cast<PngSource*>(png_get_io_ptr(p));
    if (count > s->bytes.size() - s->pos) png_error(p, "truncated stream");
    std::memcpy(out, s->bytes.data() + s->pos, count);
    s->pos += count;
  });
  png_read_info(png, info);
  const int64_t width = png_get_image_width(png, info), height = png_get_image_height(png, info);
  if (Status s = check_image_size("PNG", height, width); !s.ok()) {
    png_destroy_read_struct(&png, &info, nullptr);
    return s;
  }
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  img.height = height;
  img.width = width;
  img.rgb.resize(size_t(height * width * 3));
  rows.resize(size_t(height));
  for (int64_t y = 0; y < height; ++y) rows[size_t(y)] = &img.rgb[size_t(y * width * 3)];
  png_read_image(png, rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return img;
}
#endif

// ---- TIFF (libtiff, through its RGBA reader) ----

#if NXRT_HAVE_TIFF
struct TiffSource {
  Bytes bytes;
  toff_t pos = 0;
  std::string message;
};

Expected<DecodedImage> decode_tiff(Bytes b) {
  TiffSource source{b, 0, {}};
  TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
  auto capture = [](TIFF*, void* data, const char* module, const char* fmt, va_list args) {
    char text[256];
    std::vsnprintf(text, sizeof(text), fmt, args);
    auto* s = static_cast<TiffSource*>(data);
    if (s->message.empty()) s->message = std::string(module ? module : "") + ": " + text;
    return 1;
  };
  TIFFOpenOptionsSetErrorHandlerExtR(options, capture, &source);
  TIFFOpenOptionsSetWarningHandlerExtR(
      options, [](TIFF*, void*, const char*, const char*, va_list) { return 1; }, nullptr);
  TIFF* tif = TIFFClientOpenExt(
      "stream", "rm", &source,
      [](thandle_t h, void* out, tmsize_t n) -> tmsize_t {
        auto* s = static_cast<TiffSource*>(h);
        const auto count = std::min<tmsize_t>(n, tmsize_t(s->bytes.size() - s->pos));
        std::memcpy(out, s->bytes.data() + s->pos, size_t(count));
        s->pos += toff_t(count);
        return count;
      },
      [](thandle_t, void*, tmsize_t) -> tmsize_t { return -1; },
      [](thandle_t h, toff_t off, int whence) -> toff_t {
        auto* s = static_cast<TiffSource*>(h);
        const toff_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? s->pos : s->bytes.size();
        s->pos = std::min<toff_t>(base + off, s->bytes.size());
        return s->pos;
      },
      [](thandle_t) { return 0; },
      [](thandle_t h) -> toff_t { return static_cast<TiffSource*>(h)->bytes.size(); },
      [](thandle_t, void**, toff_t*) { return 0; }, [](thandle_t, void*, toff_t) {}, options);
  TIFFOpenOptionsFree(options);
  if (!tif)
    return invalid_argument("TIFF: ", source.message.empty() ? "not readable" : source.message);
  uint32_t width = 0, height = 0;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &height);
  if (Status s = check_image_size("TIFF", height, width); !s.ok()) {
    TIFFClose(tif);
    return s;
  }
  std::vector<uint32_t> raster(size_t(width) * height);
  const int ok =
      TIFFReadRGBAImageOriented(tif, width, height, raster.data(), ORIENTATION_TOPLEFT, 0);
  TIFFClose(tif);
  if (!ok)
    return invalid_argument("TIFF: ",
                            source.message.empty() ? "unreadable pixels" : source.message);
  DecodedImage img{height, width, std::vector<uint8_t>(size_t(width) * height * 3)};
  for (size_t i = 0; i < raster.size(); ++i) {
    img.rgb[3 * i] = uint8_t(TIFFGetR(raster[i]));
    img.rgb[3 * i + 1] = uint8_t(TIFFGetG(raster[i]));
    img.rgb[3 * i + 2] = uint8_t(TIFFGetB(raster[i]));
  }
  return img;
}
#endif

// ---- WebP (libwebp) ----

#if NXRT_HAVE_WEBP
Expected<DecodedImage> decode_webp(Bytes b) {
  int width = 0, height = 0;
  if (!WebPGetInfo(b.data(), b.size(), &width, &height))
    return invalid_argument("WebP: not a readable WebP stream");
  NXRT_RETURN_IF_ERROR(check_image_size("WebP", height, width));
  DecodedImage img{height, width, std::vector<uint8_t>(size_t(width) * size_t(height) * 3)};
  if (!WebPDecodeRGBInto(b.data(), b.size(), img.rgb.data(), img.rgb.size(), width * 3))
    return invalid_argument("WebP: the pixel data does not decode");
  return img;
}
#endif

// ---- JPEG 2000 (openjpeg): 8-bit gray or RGB(A) components of one size ----

#if NXRT_HAVE_OPENJP2
struct Jp2Source {
  Bytes bytes;
  size_t pos = 0;
  std::string message;
};

Expected<DecodedImage> decode_jpeg2000(Bytes b, bool jp2) {
  Jp2Source source{b, 0, {}};
  opj_codec_t* codec = opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  opj_set_error_handler(
      codec,
      [](const char* text, void* data) {
        auto* s = static_cast<Jp2Source*>(data);
        if (s->message.empty()) s->message = text;
      },
      &source);
  opj_set_warning_handler(
      codec, [](const char*, void*) {}, nullptr);
  opj_set_info_handler(
      codec, [](const char*, void*) {}, nullptr);
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  opj_setup_decoder(codec, &params);
  opj_stream_t* stream = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
  opj_stream_set_user_data(stream, &source, nullptr);
  opj_stream_set_user_data_length(stream, b.size());
  opj_stream_set_read_function(stream, [](void* out, OPJ_SIZE_T n, void* data) -> OPJ_SIZE_T {
    auto* s = static_cast<Jp2Source*>(data);
    if (s->pos >= s->bytes.size()) return OPJ_SIZE_T(-1);
    const size_t count = std::min(n, s->bytes.size() - s->pos);
    std::memcpy(out, s->bytes.data() + s->pos, count);
    s->pos += count;
    return count;
  });
  opj_stream_set_skip_function(stream, [](OPJ_OFF_T n, void* data) -> OPJ_OFF_T {
    auto* s = static_cast<Jp2Source*>(data);
    const auto next = std::clamp<OPJ_OFF_T>(OPJ_OFF_T(s->pos) + n, 0, OPJ_OFF_T(s->bytes.size()));
    const OPJ_OFF_T moved = next - OPJ_OFF_T(s->pos);
    s->pos = size_t(next);
    return moved;
  });
  opj_stream_set_seek_function(stream, [](OPJ_OFF_T at, void* data) -> OPJ_BOOL {
    auto* s = static_cast<Jp2Source*>(data);
    if (at < 0 || size_t(at) > s->bytes.size()) return OPJ_FALSE;
    s->pos = size_t(at);
    return OPJ_TRUE;
  });
  opj_image_t* image = nullptr;
  const bool decoded = opj_read_header(stream, codec, &image) && opj_decode(codec, stream, image) &&
                       opj_end_decompress(codec, stream);
  opj_stream_destroy(stream);
  opj_destroy_codec(codec);
  auto fail = [&](Status s) {
    if (image) opj_image_destroy(image);
    return s;
  };
  if (!decoded)
    return fail(invalid_argument("JPEG 2000: ",
                                 source.message.empty() ? "does not decode" : source.message));
  const OPJ_UINT32 comps = image->numcomps;
  if (comps != 1 && comps != 3 && comps != 4)
    return fail(not_implemented("JPEG 2000: ", comps, " components are not supported"));
  const opj_image_comp_t& first = image->comps[0];
  for (OPJ_UINT32 c = 0; c < comps; ++c)
    if (image->comps[c].w != first.w || image->comps[c].h != first.h || image->comps[c].prec != 8 ||
        image->comps[c].sgnd || !image->comps[c].data)
      return fail(
          not_implemented("JPEG 2000: only unsigned 8-bit components of one size are "
                          "supported"));
  if (Status s = check_image_size("JPEG 2000", first.h, first.w); !s.ok()) return fail(s);
  DecodedImage img{first.h, first.w, std::vector<uint8_t>(size_t(first.w) * first.h * 3)};
  const size_t pixels = size_t(first.w) * first.h;
  for (size_t i = 0; i < pixels; ++i)
    for (int c = 0; c < 3; ++c)
      img.rgb[3 * i + size_t(c)] =
          uint8_t(std::clamp(image->comps[comps == 1 ? 0 : c].data[i], 0, 255));
  opj_image_destroy(image);
  return img;
}
#endif

}  // namespace

Expected<DecodedImage> decode_with_system_codecs([[maybe_unused]] std::span<const uint8_t> b,
                                                 ImageFormat format) {
  switch (format) {
    case ImageFormat::kJpeg:
#if NXRT_HAVE_JPEG
      return decode_jpeg(b);
#else
      return missing_codec("JPEG", "libjpeg");
#endif
    case ImageFormat::kPng:
#if NXRT_HAVE_PNG
      return decode_png(b);
#else
      return missing_codec("PNG", "libpng");
#endif
    case ImageFormat::kTiff:
#if NXRT_HAVE_TIFF
      return decode_tiff(b);
#else
      return missing_codec("TIFF", "libtiff");
#endif
    case ImageFormat::kWebp:
#if NXRT_HAVE_WEBP
      return decode_webp(b);
#else
      return missing_codec("WebP", "libwebp");
#endif
    case ImageFormat::kJp2:
    case ImageFormat::kJ2k:
#if NXRT_HAVE_OPENJP2
      return decode_jpeg2000(b, format == ImageFormat::kJp2);
#else
      return missing_codec("JPEG 2000", "openjpeg");
#endif
  }
  return invalid_argument("unknown image format");
}

}  // namespace nxrt::cpu
