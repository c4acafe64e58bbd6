"""Lazy imports (example): PEP 562 module __getattr__ binds the registered name on first use."""


def __getattr__(name):
    if name == "LazyForCausalLM":
        from .impl import LazyForCausalLM

        return LazyForCausalLM
    raise AttributeError(name)
