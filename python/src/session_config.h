// The runtime's SessionConfig from the dict nxrt.SessionOptions._native() gives: sessions
// (bind_session.cc) and the generation engine's session (bind_genai_engine.cc) read it alike.
#pragma once

#include <nanobind/nanobind.h>

#include "runtime/session.h"

namespace nxrt::py {

SessionConfig session_config_from(const nanobind::dict& options);

}  // namespace nxrt::py
