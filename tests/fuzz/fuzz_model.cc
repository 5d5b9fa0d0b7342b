// Target (a): arbitrary bytes as a model; decoding, function inlining, planning (kernel
// prepare and constant folding) must end in a session or a Status, never a crash.
#include <cstddef>
#include <cstdint>

#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nxrt::SessionConfig config = nxrt::fuzz::fuzz_config();
  auto session = nxrt::Session::create_from_bytes(data, size, config);
  if (session) (void)(*session)->inputs();
  return 0;
}
