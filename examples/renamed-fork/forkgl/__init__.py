# tracer example tree: shaped like an unpacked SGLang wheel. Read, never imported.
from forkgl.version import __version__
