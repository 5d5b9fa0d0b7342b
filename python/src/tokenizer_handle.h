// nxrt._nxrt.CppTokenizer's C++ side: a shared C++ tokenizer, so that a tokenizer loaded
// for Python (CppTokenizer.from_file) and the one a C++ engine holds (CppEngine.tokenizer)
// are the same class. Tokenizer is thread-safe (its caches lock).
#pragma once

#include <memory>

#include "genai/tokenizer.h"

namespace nxrt::py {

struct CppTokenizer {
  std::shared_ptr<const genai::Tokenizer> impl;
};

}  // namespace nxrt::py
