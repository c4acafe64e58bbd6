"""Plain data passed between the stages (frozen dataclasses; imports nothing else of tracer)."""
