"""The GPU worker (example): start-up loads the model, then captures CUDA graphs."""

from vllm.v1.worker.gpu_model_runner import GPUModelRunner
from vllm.v1.worker.worker_base import WorkerBase


class Worker(WorkerBase):
    def __init__(self, vllm_config):
        super().__init__(vllm_config)
        self.model_runner = GPUModelRunner(vllm_config)

    def load_model(self):
        self.model_runner.load_model()

    def compile_or_warm_up_model(self):
        self.model_runner.capture_model()
