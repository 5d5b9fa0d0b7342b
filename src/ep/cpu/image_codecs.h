// Decoding of encoded images (ONNX ImageDecoder): the format is told by its first bytes.
// BMP and PNM are read here; JPEG, PNG, TIFF, WebP and JPEG 2000 go through the system's
// codec libraries (libjpeg-turbo, libpng, libtiff, libwebp, openjpeg: the decoders Pillow,
// the ONNX reference, uses) in image_codecs_system.cc, a library of its own that a program
// links and installs with set_system_image_decoder(); without it those formats, or a codec
// the build lacks, are errors that say so.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace nxrt::cpu {

struct DecodedImage {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> rgb;  // height x width x 3, row-major
};

Expected<DecodedImage> decode_image(std::span<const uint8_t> bytes);

enum class ImageFormat { kJpeg, kPng, kTiff, kWebp, kJp2, kJ2k };
using SystemImageDecoder = Expected<DecodedImage> (*)(std::span<const uint8_t>, ImageFormat);

// Installs the decoder of the formats that need system libraries (process-wide).
void set_system_image_decoder(SystemImageDecoder decoder);

// That decoder, defined in nxrt_image_codecs (image_codecs_system.cc).
Expected<DecodedImage> decode_with_system_codecs(std::span<const uint8_t> bytes,
                                                 ImageFormat format);

// An error unless height x width is a positive image of at most 2^28 pixels.
Status check_image_size(const char* format, int64_t height, int64_t width);

}  // namespace nxrt::cpu
