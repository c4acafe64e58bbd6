"""The cyclic garbage collector paused for a stage that builds millions of small acyclic objects
(outlines, summaries, decoded call-graph IR): each collection walked every live object again,
a quarter of a cold scan's parsing and a third of the graph's decoding. Reference counting still
frees them; the collector comes back as it was."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def paused_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
