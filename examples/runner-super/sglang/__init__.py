# tracer example tree: shaped like an unpacked SGLang wheel. Read, never imported.
from sglang.version import __version__
