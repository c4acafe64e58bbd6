"""ModelRunner in three classes: the setter is called through super().initialize()
in an intermediate class, after the base's start-up has captured CUDA graphs
(tracer example). super() in SpecModelRunner.initialize means the class after
SpecModelRunner in ModelRunner's MRO (BaseModelRunner), not the one after ModelRunner."""

import logging
from typing import List, Optional

from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner
from sglang.srt.model_loader import get_model

logger = logging.getLogger(__name__)


class BaseModelRunner:
    def initialize(self):
        self.init_device_graphs()

    def init_device_graphs(self):
        """Capture device graphs."""
        self.graph_runner = None
        if self.server_args.disable_cuda_graph:
            return
        logger.info("Capture cuda graph begin.")
        self.graph_runner = CudaGraphRunner(self)


class SpecModelRunner(BaseModelRunner):
    def initialize(self):
        super().initialize()
        # Too late: the graphs captured above replay the layers set before this call.
        if self.spec_algorithm.is_eagle3() and not self.is_draft_worker:
            self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)  # expect: call-order


class ModelRunner(SpecModelRunner):
    """ModelRunner runs the forward passes of the models."""

    def __init__(self, model_config, server_args, is_draft_worker: bool = False):
        self.model_config = model_config
        self.server_args = server_args
        self.device = server_args.device
        self.spec_algorithm = server_args.speculative_algorithm
        self.is_draft_worker = is_draft_worker
        self.eagle_aux_hidden_state_layer_ids = self.read_eagle_layer_ids()
        self.initialize()

    def read_eagle_layer_ids(self) -> Optional[List[int]]:
        draft_hf_config = self.server_args.speculative_draft_hf_config
        eagle_config = getattr(draft_hf_config, "eagle_config", None) or {}
        return eagle_config.get("eagle_aux_hidden_state_layer_ids")

    def initialize(self):
        self.load_model()
        self.init_attention_backend()
        super().initialize()

    def load_model(self):
        self.model = get_model(model_config=self.model_config, device=self.device)

    def init_attention_backend(self):
        self.attn_backend = self.server_args.attention_backend

    def forward(self, forward_batch):
        if self.graph_runner is not None and self.graph_runner.can_run(forward_batch):
            return self.graph_runner.replay(forward_batch)
        return self.model.forward(forward_batch.input_ids, forward_batch.positions, forward_batch)
