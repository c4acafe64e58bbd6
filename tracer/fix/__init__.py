"""Fixes: the catalogue's codemods for the findings with one obvious repair, each kept only
when a re-trace of the chains it reaches confirms it (``tracer scan --fix``, ``tracer lint --fix``)."""
