"""Loud import-only stand-ins for optional packages the framework imports but
the capture path never uses.

A stub is installed for a root package only when the real one cannot be
imported. Its modules are permissive while the framework is being imported
(attribute access, subclassing, use as a decorator, decorator factories such
as ``triton.autotune(...)``), but anything that looks like real work fails
loudly with :class:`StubCalled`: calling a decorated function, calling a stub
with a tensor argument, or creating an instance of a class derived from a
stub. Every stub that was installed, and every name read from it, is recorded
so the report can list them; a passing run therefore proves that none of
these packages took part in the forward pass.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from collections.abc import Iterable

# Roots the capture path imports but never runs (see runtime-harness-notes).
DEFAULT_ROOTS = ["torchvision", "orjson", "psutil", "pybase64", "requests", "triton", "starlette", "fastapi", "zmq", "IPython", "aiohttp", "tvm_ffi", "sentencepiece", "compressed_tensors", "gguf", "einops", "partial_json_parser", "uvicorn", "uvloop", "setproctitle"]
# Imported by CUDA-guarded code only, or (0.5.6) hard-imported by a MoE runner.
CUDA_ROOTS = ["sgl_kernel", "cutlass", "flashinfer", "deep_gemm", "quack"]
OLD_RELEASE_ROOTS = ["sgl_kernel", "vllm"]


class StubCalled(RuntimeError):
    """A stand-in for a missing package was used for real work."""


class _Usage:
    def __init__(self) -> None:
        self.roots: dict[str, set[str]] = {}

    def touch(self, dotted: str) -> None:
        root = dotted.split(".")[0]
        self.roots.setdefault(root, set()).add(dotted)


USAGE = _Usage()


def _is_tensor(value) -> bool:
    mod = type(value).__module__
    return mod.startswith("torch") and type(value).__name__ in ("Tensor", "Parameter")


class _StubMeta(type):
    """Metaclass of every stub attribute: the attribute is a class, so it can
    be subclassed and used in annotations, and its calls are policed here."""

    def __getattr__(cls, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return _make_stub(f"{cls._stub_name}.{name}")

    def __call__(cls, *args, **kwargs):
        if not cls.__dict__.get("_stub_is_root_attr", False):
            # a class the framework derived from a stub: instances are real use
            raise StubCalled(f"instance of {cls.__name__} (derived from stub "
                             f"{cls._stub_name}) was created")
        if any(_is_tensor(a) for a in list(args) + list(kwargs.values())):
            raise StubCalled(f"stub {cls._stub_name} was called with a tensor")
        if len(args) == 1 and not kwargs and callable(args[0]):
            return _decorated(cls._stub_name, args[0])
        # a decorator factory or a constant-building call at import time
        USAGE.touch(cls._stub_name + "()")
        return _make_stub(f"{cls._stub_name}(...)")

    def __getitem__(cls, item):
        return _make_stub(f"{cls._stub_name}[...]")

    def __iter__(cls):
        return iter(())

    def __bool__(cls):
        return False

    def __repr__(cls):
        return f"<stub {cls._stub_name}>"


def _any_schema(cls, source, handler):
    """pydantic: a stub used as a field type validates anything (vLLM's
    protocol models annotate fields with optional packages' classes)."""
    from pydantic_core import core_schema

    return core_schema.any_schema()


def _make_stub(dotted: str):
    USAGE.touch(dotted)
    stub = _StubMeta(dotted.rsplit(".", 1)[-1], (), {"_stub_name": dotted,
                                                    "_stub_is_root_attr": True,
                                                    "__get_pydantic_core_schema__": classmethod(_any_schema)})
    return stub


def _decorated(name: str, fn):
    def refuse(*args, **kwargs):
        raise StubCalled(f"{getattr(fn, '__qualname__', fn)} decorated by stub {name} was called")

    refuse.__wrapped__ = fn
    refuse.__name__ = getattr(fn, "__name__", "stubbed")
    refuse.__qualname__ = getattr(fn, "__qualname__", refuse.__name__)
    # triton kernels are indexed with a grid before being called
    return _GridCallable(refuse)


class _GridCallable:
    def __init__(self, fn):
        self._fn = fn
        self.__wrapped__ = fn.__wrapped__
        self.__name__ = fn.__name__
        self.__qualname__ = fn.__qualname__

    def __call__(self, *args, **kwargs):
        return self._fn(*args, **kwargs)

    def __getitem__(self, grid):
        return self._fn

    def __getattr__(self, name):
        return _make_stub(f"{self.__name__}.{name}")


_HAND_BACK: dict[str, str] = {}


def hand_back(stub_module: str, source_module: str) -> None:
    """Names imported from ``stub_module`` come from the (possibly half
    imported) ``source_module`` instead: for a framework that replaces its own
    classes with a missing package's at the end of a module."""
    _HAND_BACK[stub_module] = source_module


class StubModule(types.ModuleType):
    def __init__(self, name: str):
        super().__init__(name)
        self.__path__ = []  # a package, so submodules resolve through the finder
        self.__stub__ = True
        USAGE.touch(name)

    def __getattr__(self, name):
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        if f"{self.__name__}.{name}" in _EXTRA_SUBMODULES:
            # a submodule with real values (triton.runtime.driver, ...)
            return importlib.import_module(f"{self.__name__}.{name}")
        source = _HAND_BACK.get(self.__name__)
        if source is not None and source in sys.modules and hasattr(sys.modules[source], name):
            USAGE.touch(f"{self.__name__}.{name} -> {source}.{name}")
            return getattr(sys.modules[source], name)
        value = _make_stub(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


_EXTRA_SUBMODULES = {"triton.runtime", "triton.language", "triton.runtime.autotuner"}


def _triton_extras(module: StubModule) -> None:
    """torch and SGLang read a few plain values from triton at import time."""
    name = module.__name__
    if name == "triton":
        module.__version__ = "3.0.0"
        module.cdiv = lambda a, b: -(-a // b)
        module.next_power_of_2 = lambda n: 1 if n <= 1 else 1 << (int(n) - 1).bit_length()
    elif name == "triton.language":
        module.constexpr = _make_stub("triton.language.constexpr")
    elif name == "triton.runtime.autotuner":
        module.OutOfResources = type("OutOfResources", (Exception,), {})
    elif name == "triton.runtime":
        # "which GPU backend is active" must fail, as it does without a GPU
        # (SGLang's fla utils then pick "cpu"), not answer with a stub
        module.driver = _Refusing("triton.runtime.driver")


class _Refusing:
    """An attribute whose every use raises StubCalled (code that probes it
    under try/except takes its no-GPU branch)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        USAGE.touch(f"{self._name}.{name}")
        raise StubCalled(f"{self._name}.{name} read (stub)")


class _StubLoader(importlib.abc.Loader):
    def create_module(self, spec):
        module = StubModule(spec.name)
        if spec.name.split(".")[0] == "triton":
            _triton_extras(module)
        return module

    def exec_module(self, module):
        pass


class _StubFinder(importlib.abc.MetaPathFinder):
    def __init__(self, roots: Iterable[str]):
        self.roots = set(roots)

    def find_spec(self, fullname, path=None, target=None):
        # a root is a top-level package, or a dotted subpackage of a real one
        if fullname.split(".")[0] in self.roots or any(
                "." in root and (fullname == root or fullname.startswith(root + ".")) for root in self.roots):
            return importlib.machinery.ModuleSpec(fullname, _StubLoader(), is_package=True)
        return None


_FINDER: _StubFinder | None = None


def _really_importable(root: str) -> bool:
    if root in sys.modules:
        return not getattr(sys.modules[root], "__stub__", False)
    try:
        return importlib.util.find_spec(root) is not None
    except (ImportError, ValueError):
        return False


def install(roots: Iterable[str], force: Iterable[str] = ()) -> list[str]:
    """Stub every root in ``roots`` that is not really importable, and every
    root in ``force`` (installed, but at a version the framework cannot
    import); return the roots stubbed by this call and earlier ones."""
    global _FINDER
    forced = list(force)
    missing = [r for r in roots if r not in forced and not _really_importable(r)] + forced
    if "torchvision" in missing:
        # transformers caches whether torchvision exists; pin it to the truth
        # before the stub makes the name importable
        try:
            from transformers.utils import import_utils

            import_utils.is_torchvision_available()
        except Exception:
            pass
    if _FINDER is None:
        _FINDER = _StubFinder([])
        sys.meta_path.insert(0, _FINDER)
    _FINDER.roots.update(missing)
    return sorted(_FINDER.roots)


def installed() -> list[str]:
    return sorted(_FINDER.roots) if _FINDER else []


def report() -> dict[str, list[str]]:
    """Stubbed root -> names the framework read from it (a bounded sample)."""
    out = {}
    for root in installed():
        names = sorted(USAGE.roots.get(root, ()))
        out[root] = names[:12] + ([f"... {len(names) - 12} more"] if len(names) > 12 else [])
    return out
