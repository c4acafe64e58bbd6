from dataclasses import dataclass


@dataclass
class SpecMetadata:
    num_layers: int = 0
    max_num_tokens: int = 0

    def maybe_capture_hidden_states(self, layer_id: int, hidden_states, residual=None) -> None:
        """Most speculative modes capture nothing."""
