"""tracer: a static code-path tracer for LLM inference frameworks."""

__version__ = "0.1.0"
