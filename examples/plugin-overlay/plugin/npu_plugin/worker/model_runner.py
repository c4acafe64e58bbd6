"""The NPU runner (example): a subclass of the GPU runner whose load_model sets the model's
default layers, whatever the draft config names, and says nothing."""

from vllm.v1.worker.gpu_model_runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def load_model(self):
        self.model = self.load_npu_model()
        self.model.set_aux_hidden_state_layers(self.model.get_eagle3_default_aux_hidden_state_layers())  # expect: ids-dropped

    def load_npu_model(self):
        return None

    def capture_model(self):
        """Capture NPU graphs of the decode step."""
