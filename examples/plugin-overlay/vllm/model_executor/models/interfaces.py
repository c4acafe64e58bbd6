"""SupportsEagle3 and EagleModelMixin (example, cut down from vLLM 0.33.0 interfaces.py)."""


class EagleModelMixin:
    aux_hidden_state_layers = ()

    def _set_aux_hidden_state_layers(self, layers):
        self.aux_hidden_state_layers = tuple(layers)

    def _maybe_add_hidden_state(self, aux_hidden_states, layer_idx, hidden_states, residual):
        if layer_idx in self.aux_hidden_state_layers:
            value = hidden_states + residual if residual is not None else hidden_states
            aux_hidden_states.append(value)
        return aux_hidden_states


class SupportsEagle3:
    def set_aux_hidden_state_layers(self, layers):
        parent_ref = self
        if hasattr(self, "get_language_model"):
            parent_ref = self.get_language_model()
        elif hasattr(self, "language_model"):
            parent_ref = self.language_model
        holder = getattr(parent_ref, "model", parent_ref)
        holder._set_aux_hidden_state_layers(layers)

    def get_eagle3_default_aux_hidden_state_layers(self):
        num_layers = self.config.num_hidden_layers
        return (2, num_layers // 2, num_layers - 3)
