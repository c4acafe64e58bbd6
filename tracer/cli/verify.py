"""`tracer verify`: the runtime harness (torch and the framework are imported only there)."""

from __future__ import annotations

from tracer.verify.cli import verify_command

__all__ = ["verify_command"]
