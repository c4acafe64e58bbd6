"""The whole-program call graph (`tracer graph --all`)."""
