#include "core/status.h"

namespace nxrt {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "Ok";
    case StatusCode::kFail:
      return "Fail";
    case StatusCode::kInvalidArgument:
      return "InvalidArgument";
    case StatusCode::kNoSuchFile:
      return "NoSuchFile";
    case StatusCode::kNoModel:
      return "NoModel";
    case StatusCode::kEngineError:
      return "EngineError";
    case StatusCode::kRuntimeException:
      return "RuntimeException";
    case StatusCode::kInvalidProtobuf:
      return "InvalidProtobuf";
    case StatusCode::kModelLoaded:
      return "ModelLoaded";
    case StatusCode::kNotImplemented:
      return "NotImplemented";
    case StatusCode::kInvalidGraph:
      return "InvalidGraph";
    case StatusCode::kEPFail:
      return "EPFail";
  }
  return "Unknown";
}

}  // namespace nxrt
