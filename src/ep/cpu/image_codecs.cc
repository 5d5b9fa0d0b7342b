#include "ep/cpu/image_codecs.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <string>
#include <string_view>

namespace nxrt::cpu {
namespace {

using Bytes = std::span<const uint8_t>;

bool starts_with(Bytes b, std::string_view prefix) {
  return b.size() >= prefix.size() && std::memcmp(b.data(), prefix.data(), prefix.size()) == 0;
}

uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24; }
uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

// ---- BMP: uncompressed 1-, 4-, 8-bit (palette), 24- and 32-bit rows ----

Expected<DecodedImage> decode_bmp(Bytes b) {
  if (b.size() < 54) return invalid_argument("BMP: truncated header (", b.size(), " bytes)");
  const uint32_t data_offset = le32(&b[10]), header = le32(&b[14]);
  if (header < 40)
    return not_implemented("BMP: the ", header, "-byte OS/2 header is not supported");
  const auto width = int32_t(le32(&b[18])), signed_height = int32_t(le32(&b[22]));
  const uint16_t bits = le16(&b[28]);
  const uint32_t compression = le32(&b[30]);
  if (compression != 0 && !(compression == 3 && bits == 32))
    return not_implemented("BMP: compression ", compression, " is not supported (only none)");
  if (bits != 1 && bits != 4 && bits != 8 && bits != 24 && bits != 32)
    return not_implemented("BMP: ", bits, " bits per pixel are not supported");
  const bool top_down = signed_height < 0;
  const int64_t height = top_down ? -int64_t(signed_height) : signed_height;
  NXRT_RETURN_IF_ERROR(check_image_size("BMP", height, width));
  const int64_t stride = (int64_t(bits) * width + 31) / 32 * 4;
  if (data_offset > b.size() || stride * height > int64_t(b.size() - data_offset))
    return invalid_argument("BMP: pixel data truncated: ", stride * height, " bytes from ",
                            data_offset, ", the stream has ", b.size());
  std::vector<uint8_t> palette;  // BGRx entries
  if (bits <= 8) {
    uint32_t colors = le32(&b[46]);
    if (colors == 0 || colors > (1u << bits)) colors = 1u << bits;
    const size_t at = 14 + size_t(header);
    if (at + 4 * size_t(colors) > data_offset)
      return invalid_argument("BMP: palette of ", colors, " colors truncated");
    palette.assign(b.begin() + int64_t(at), b.begin() + int64_t(at + 4 * colors));
  }
  DecodedImage img{height, width, std::vector<uint8_t>(size_t(height * width * 3))};
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = &b[data_offset + size_t((top_down ? y : height - 1 - y) * stride)];
    uint8_t* out = &img.rgb[size_t(y * width * 3)];
    for (int64_t x = 0; x < width; ++x, out += 3) {
      if (bits >= 24) {
        const uint8_t* p = row + x * (bits / 8);
        out[0] = p[2], out[1] = p[1], out[2] = p[0];
        continue;
      }
      const int64_t bit = x * bits;
      const unsigned index = (row[bit / 8] >> (8 - bits - bit % 8)) & ((1u << bits) - 1);
      if (4 * size_t(index) + 2 >= palette.size())
        return invalid_argument("BMP: palette index ", index, " past the palette");
      out[0] = palette[4 * index + 2], out[1] = palette[4 * index + 1], out[2] = palette[4 * index];
    }
  }
  return img;
}

// ---- PNM: P2 / P5 (gray) and P3 / P6 (RGB), values up to 255 scaled to 0-255 ----

Expected<DecodedImage> decode_pnm(Bytes b) {
  const char kind = char(b[1]);
  size_t pos = 2;
  // The next header number, whitespace and '#' comments skipped.
  auto number = [&](const char* what) -> Expected<int64_t> {
    while (pos < b.size()) {
      if (b[pos] == '#') {
        while (pos < b.size() && b[pos] != '\n') ++pos;
      } else if (std::isspace(b[pos])) {
        ++pos;
      } else {
        break;
      }
    }
    int64_t v = 0;
    const size_t start = pos;
    while (pos < b.size() && std::isdigit(b[pos]) && v < (int64_t(1) << 40))
      v = v * 10 + (b[pos++] - '0');
    if (pos == start) return invalid_argument("PNM: expected the ", what, " at byte ", start);
    return v;
  };
  NXRT_ASSIGN_OR_RETURN(const int64_t width, number("width"));
  NXRT_ASSIGN_OR_RETURN(const int64_t height, number("height"));
  NXRT_ASSIGN_OR_RETURN(const int64_t maxval, number("maximum value"));
  NXRT_RETURN_IF_ERROR(check_image_size("PNM", height, width));
  if (maxval < 1 || maxval > 255)
    return not_implemented("PNM: maximum value ", maxval, " is not supported (1 to 255)");
  const bool binary = kind == '5' || kind == '6';
  const int channels = kind == '3' || kind == '6' ? 3 : 1;
  if (binary) ++pos;  // the single whitespace byte before the samples
  const int64_t samples = height * width * channels;
  DecodedImage img{height, width, std::vector<uint8_t>(size_t(height * width * 3))};
  for (int64_t i = 0; i < samples; ++i) {
    int64_t v = 0;
    if (binary) {
      if (pos >= b.size())
        return invalid_argument("PNM: samples truncated at ", i, " of ", samples);
      v = b[pos++];
    } else {
      NXRT_ASSIGN_OR_RETURN(v, number("sample"));
    }
    if (v > maxval) return invalid_argument("PNM: sample ", v, " exceeds the maximum ", maxval);
    const auto value = uint8_t(maxval == 255 ? v : (v * 255 + maxval / 2) / maxval);
    if (channels == 3)
      img.rgb[size_t(i)] = value;
    else
      std::fill_n(&img.rgb[size_t(i * 3)], 3, value);
  }
  return img;
}

// The decoder of the formats that need system libraries; null until a program that links
// nxrt_image_codecs sets it.
std::atomic<SystemImageDecoder> g_system_decoder{nullptr};

const char* format_name(ImageFormat f) {
  switch (f) {
    case ImageFormat::kJpeg:
      return "JPEG";
    case ImageFormat::kPng:
      return "PNG";
    case ImageFormat::kTiff:
      return "TIFF";
    case ImageFormat::kWebp:
      return "WebP";
    default:
      return "JPEG 2000";
  }
}

Expected<DecodedImage> system_format(Bytes b, ImageFormat format) {
  if (SystemImageDecoder decode = g_system_decoder.load()) return decode(b, format);
  return not_implemented(format_name(format),
                         " images need the system image codecs, which this "
                         "program does not link (the Python package and the nxrt CLI do; "
                         "libnxrt and the C API decode BMP and PNM only)");
}

}  // namespace

Status check_image_size(const char* format, int64_t height, int64_t width) {
  // At most this many pixels (a 16k x 16k image): a header claiming more is refused
  // before anything is allocated.
  constexpr int64_t kMaxPixels = int64_t(1) << 28;
  if (height <= 0 || width <= 0 || height > kMaxPixels / width)
    return invalid_argument(format, ": image of ", width, " x ", height,
                            " pixels is empty or too large");
  return Status();
}

void set_system_image_decoder(SystemImageDecoder decoder) { g_system_decoder.store(decoder); }

Expected<DecodedImage> decode_image(Bytes b) {
  if (b.size() < 4) return invalid_argument("encoded stream of ", b.size(), " bytes is no image");
  if (starts_with(b, "\xFF\xD8\xFF")) return system_format(b, ImageFormat::kJpeg);
  if (starts_with(b, "\x89PNG\r\n\x1A\n")) return system_format(b, ImageFormat::kPng);
  if (starts_with(b, std::string_view("II*\0", 4)) || starts_with(b, std::string_view("MM\0*", 4)))
    return system_format(b, ImageFormat::kTiff);
  if (b.size() >= 12 && starts_with(b, "RIFF") && std::memcmp(&b[8], "WEBP", 4) == 0)
    return system_format(b, ImageFormat::kWebp);
  if (starts_with(b, std::string_view("\0\0\0\x0CjP  \r\n\x87\n", 12)))
    return system_format(b, ImageFormat::kJp2);
  if (starts_with(b, "\xFF\x4F\xFF\x51")) return system_format(b, ImageFormat::kJ2k);
  if (starts_with(b, "BM")) return decode_bmp(b);
  if (b[0] == 'P' && (b[1] == '2' || b[1] == '3' || b[1] == '5' || b[1] == '6'))
    return decode_pnm(b);
  return not_implemented(
      "the encoded stream is no JPEG, PNG, TIFF, WebP, JPEG 2000, BMP or "
      "PNM image (first bytes ",
      int(b[0]), " ", int(b[1]), " ", int(b[2]), " ", int(b[3]), ")");
}

}  // namespace nxrt::cpu
