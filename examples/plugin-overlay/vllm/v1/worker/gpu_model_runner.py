"""GPUModelRunner (example, vLLM's shape): loads the model, sets the draft's layers, captures graphs."""

from vllm.model_executor.model_loader import get_model


class GPUModelRunner:
    def __init__(self, vllm_config):
        self.vllm_config = vllm_config
        self.use_aux_hidden_state_outputs = True

    def load_model(self):
        self.model = get_model(vllm_config=self.vllm_config)
        if self.use_aux_hidden_state_outputs:
            self.model.set_aux_hidden_state_layers(self._eagle3_layers_from_config())

    def _eagle3_layers_from_config(self):
        draft = self.vllm_config.speculative_config.draft_model_config.hf_config
        return getattr(draft, "eagle_aux_hidden_state_layer_ids", None)

    def capture_model(self):
        """Capture CUDA graphs of the decode step."""
