"""The NPU runner (example): a subclass of the GPU runner whose load_model sets the model's
default layers, whatever the draft config names, and says nothing."""

from vllm.v1.worker.gpu_model_runner import GPUModelRunner


class NPUModelRunner(GPUModelRunner):
    def load_model(self):
        self.model = self.load_npu_model()
        self.model.set_aux_hidden_state_layers(self.model.get_eagle3_default_aux_hidden_state_layers())  # expect: ids-dropped
        if self.vllm_config.parallel_config.pipeline_parallel_size > 1:
            from npu_plugin.patch.pp_forward import patch_pp_forward

            patch_pp_forward(self.model.model)

    def load_npu_model(self):
        return None

    def capture_model(self):
        """Capture NPU graphs of the decode step."""
