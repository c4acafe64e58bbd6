"""Model registry filled at import time (tracer example; no EntryClass here).

Which class an architecture name maps to is only known once every module
under sglang.srt.models has been imported, so it cannot be read statically.
"""

import importlib
import logging
import pkgutil
from typing import Dict, List, Tuple, Type, Union

from torch import nn

logger = logging.getLogger(__name__)


def import_model_classes() -> Dict[str, Type[nn.Module]]:
    model_arch_name_to_cls = {}
    package = importlib.import_module("sglang.srt.models")
    for _, name, ispkg in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
        if ispkg:
            continue
        module = importlib.import_module(name)
        entry = getattr(module, "EntryClass", None)
        if entry is None:
            continue
        for cls in entry if isinstance(entry, list) else [entry]:
            model_arch_name_to_cls[cls.__name__] = cls
    return model_arch_name_to_cls


class _ModelRegistry:
    def __init__(self) -> None:
        self.models: Dict[str, Type[nn.Module]] = {}

    def resolve_model_cls(
        self, architectures: Union[str, List[str]]
    ) -> Tuple[Type[nn.Module], str]:
        if not self.models:
            self.models = import_model_classes()
        if isinstance(architectures, str):
            architectures = [architectures]
        for arch in architectures:
            if arch in self.models:
                return self.models[arch], arch
        raise ValueError(f"Model architectures {architectures} are not supported")


ModelRegistry = _ModelRegistry()
