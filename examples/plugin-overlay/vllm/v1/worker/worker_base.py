"""WorkerBase (example): what every platform's worker implements."""


class WorkerBase:
    def __init__(self, vllm_config):
        self.vllm_config = vllm_config

    def load_model(self):
        raise NotImplementedError

    def compile_or_warm_up_model(self):
        raise NotImplementedError
