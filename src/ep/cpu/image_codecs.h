// Decoding of encoded images (ONNX ImageDecoder): the format is told by its first bytes;
// JPEG, PNG, TIFF, WebP and JPEG 2000 go through the system's codec libraries (libjpeg-
// turbo, libpng, libtiff, libwebp, openjpeg: the decoders Pillow, the ONNX reference, uses),
// BMP and PNM through the small readers here. A codec the build lacks is an error that
// names it.
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

}  // namespace nxrt::cpu
