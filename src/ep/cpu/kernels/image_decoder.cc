// ONNX ImageDecoder: an encoded image (uint8 bytes of JPEG, PNG, TIFF, WebP, JPEG 2000,
// BMP or PNM; ep/cpu/image_codecs.h) to uint8 [H, W, 3] RGB or BGR, or [H, W, 1] grayscale
// by Pillow's weights (ITU-R 601-2 luma, 299/587/114 in 16-bit fixed point, rounded), as
// the ONNX reference converts.
#include <string>

#include "ep/cpu/image_codecs.h"
#include "ep/cpu/kernels/common.h"

namespace nxrt::cpu {
namespace {

enum class PixelFormat { kRgb, kBgr, kGray };

class ImageDecoderKernel final : public Kernel {
 public:
  explicit ImageDecoderKernel(PixelFormat format) : format_(format) {}

  Status compute(KernelContext& ctx) const override {
    const Tensor& x = *ctx.input(0);
    if (x.rank() != 1)
      return invalid_argument("encoded_stream must be 1-D bytes, got ", x.shape().to_string());
    NXRT_ASSIGN_OR_RETURN(DecodedImage img, decode_image({x.data<uint8_t>(), size_t(x.numel())}));
    const int64_t channels = format_ == PixelFormat::kGray ? 1 : 3;
    NXRT_ASSIGN_OR_RETURN(Tensor * y, ctx.output(0, Shape{img.height, img.width, channels}));
    uint8_t* out = y->data<uint8_t>();
    const int64_t pixels = img.height * img.width;
    const uint8_t* rgb = img.rgb.data();
    for (int64_t i = 0; i < pixels; ++i, rgb += 3) {
      switch (format_) {
        case PixelFormat::kRgb:
          out[3 * i] = rgb[0], out[3 * i + 1] = rgb[1], out[3 * i + 2] = rgb[2];
          break;
        case PixelFormat::kBgr:
          out[3 * i] = rgb[2], out[3 * i + 1] = rgb[1], out[3 * i + 2] = rgb[0];
          break;
        case PixelFormat::kGray:
          out[i] = uint8_t((rgb[0] * 19595u + rgb[1] * 38470u + rgb[2] * 7471u + 0x8000u) >> 16);
          break;
      }
    }
    return Status();
  }

 private:
  PixelFormat format_;
};

}  // namespace

Expected<KernelPtr> create_image_decoder(KernelInit& init) {
  if (init.input_type(0) != DataType::kUint8) return init.unsupported_type(0);
  AttrReader attrs(init.node);
  const std::string format = attrs.get_string("pixel_format", "RGB");
  NXRT_RETURN_IF_ERROR(attrs.status());
  PixelFormat f;
  if (format == "RGB")
    f = PixelFormat::kRgb;
  else if (format == "BGR")
    f = PixelFormat::kBgr;
  else if (format == "Grayscale")
    f = PixelFormat::kGray;
  else
    return init.error(StatusCode::kInvalidGraph, "pixel_format '", format,
                      "' is not RGB, BGR or Grayscale");
  init.output_types[0] = DataType::kUint8;
  return make_kernel<ImageDecoderKernel>(f);
}

}  // namespace nxrt::cpu
