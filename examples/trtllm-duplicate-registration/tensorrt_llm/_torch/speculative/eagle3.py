import logging
from dataclasses import dataclass
from typing import Optional, Set

from .interface import SpecMetadata

logger = logging.getLogger(__name__)


@dataclass
class Eagle3SpecMetadata(SpecMetadata):
    layers_to_capture: Optional[Set[int]] = None
    hidden_size: int = 0

    def __post_init__(self):
        if self.layers_to_capture is None:
            logger.warning("the draft config names no capture layers; using the default three")
            self.layers_to_capture = (1, self.num_layers // 2 - 1, self.num_layers - 4)
        else:
            self.layers_to_capture = sorted(self.layers_to_capture)

    def maybe_capture_hidden_states(self, layer_id: int, hidden_states, residual=None) -> None:
        for i, captured in enumerate(self.layers_to_capture):
            if captured == layer_id:
                self.buffer[:, i * self.hidden_size:(i + 1) * self.hidden_size] = hidden_states
