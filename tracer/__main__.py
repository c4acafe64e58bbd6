"""`python -m tracer` is the `tracer` command."""

from tracer.cli import main

main()
