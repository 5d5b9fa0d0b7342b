"""The exception classes under onnxruntime's module path."""

from .._errors import (EngineError, EPFail, Fail, InvalidArgument, InvalidGraph,  # noqa: F401
                       InvalidProtobuf, ModelLoaded, NoModel, NoSuchFile, NotImplemented,
                       RuntimeException)
