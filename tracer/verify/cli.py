"""`python -m tracer.verify.cli ARGS` is `tracer verify ARGS` (the command lines of
examples/verify-h200 were written this way)."""

from __future__ import annotations

import runpy
import sys

if __name__ == "__main__":
    sys.argv = ["tracer", "verify", *sys.argv[1:]]
    runpy.run_module("tracer", run_name="__main__")
