"""``tracer verify``: the runtime harness.

Runs SGLang's own model code on tiny configs and reports which layers the
EAGLE-3 aux hidden states really come from. torch and SGLang are imported
only when the command runs; importing this package needs neither.
"""
