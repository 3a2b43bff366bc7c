"""Stand-in tensorrt, API generation 10.x: see ../../common.py. Not TensorRT; plumbing tests only."""

import importlib.util
import os
import sys

_common = os.path.join(os.path.dirname(__file__), "..", "..", "common.py")
_spec = importlib.util.spec_from_file_location("fake_trt_api", _common)
_api = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_api)
_api.install(sys.modules[__name__], "10")
