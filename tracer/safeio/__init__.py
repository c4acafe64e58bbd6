"""Safe file I/O: the one reading rule and the one writing rule every stage uses.

Reading (read.py): regular files only, opened non-blocking, size-bounded, inside
the root a file belongs to (a link that leaves the root is refused).
Writing (write.py): inside the output folder, temp file + rename, never through
a link. Authenticated cache entries (auth.py): an HMAC whose key lives outside
the cache folder. Imports nothing of tracer but ``tracer.model``.
"""

from tracer.safeio.read import TreeReader, Unreadable, is_within, read_bytes, read_or_none
from tracer.safeio.write import Unwritable, write_bytes

__all__ = ["TreeReader", "Unreadable", "Unwritable", "is_within", "read_bytes", "read_or_none", "write_bytes"]
