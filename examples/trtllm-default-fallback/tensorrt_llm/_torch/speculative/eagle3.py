from dataclasses import dataclass
from typing import Optional, Set

from .interface import SpecMetadata


@dataclass
class Eagle3SpecMetadata(SpecMetadata):
    """Two-model EAGLE-3: the target's engine captures into a buffer the draft's engine reads."""

    layers_to_capture: Optional[Set[int]] = None
    is_draft_model: bool = False

    def __post_init__(self):
        if self.is_draft_model:
            self.layers_to_capture = (self.num_layers - 1, )
        elif self.layers_to_capture is None:
            if self.num_layers <= 5:
                raise ValueError("too few layers for the default EAGLE-3 capture")
            self.layers_to_capture = (1, self.num_layers // 2 - 1, self.num_layers - 4)  # expect: silent-fallback
        else:
            self.layers_to_capture = sorted(self.layers_to_capture)

    def maybe_capture_hidden_states(self, layer_id: int, hidden_states, residual=None) -> None:
        for i, captured in enumerate(self.layers_to_capture):
            if captured == layer_id:
                self.buffer[:, i] = hidden_states


@dataclass
class Eagle3OneModelSpecMetadata(SpecMetadata):
    """One-engine EAGLE-3: the same default, on its own copy of the field."""

    layers_to_capture: Optional[Set[int]] = None

    def __post_init__(self):
        if self.layers_to_capture is None:
            self.layers_to_capture = (1, self.num_layers // 2 - 1, self.num_layers - 4)  # expect: silent-fallback
        else:
            self.layers_to_capture = sorted(self.layers_to_capture)
