"""The NPU worker (example): on this platform its start-up is the one that runs."""

from npu_plugin.worker.model_runner import NPUModelRunner
from vllm.v1.worker.worker_base import WorkerBase


class NPUWorker(WorkerBase):
    def __init__(self, vllm_config):
        super().__init__(vllm_config)
        self.model_runner = NPUModelRunner(vllm_config)

    def load_model(self):
        self.model_runner.load_model()

    def compile_or_warm_up_model(self):
        self.model_runner.capture_model()
