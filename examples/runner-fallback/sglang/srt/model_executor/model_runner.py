"""ModelRunner runs the forward passes of the models (tracer example).

The runner reads the draft's layer ids under a handler that swallows every
error: a draft config without the key silently gets the setter's fallback.
"""

import logging
from typing import List, Optional

from sglang.srt.model_executor.cuda_graph_runner import CudaGraphRunner
from sglang.srt.model_loader import get_model

logger = logging.getLogger(__name__)


class ModelRunner:
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
        # SGLang 0.5.23's shape (spec_aux_hidden_state.py:186-196): any error while
        # reading the key, a missing eagle_config included, becomes None, and the
        # setter then captures its default layers; nothing is logged.
        draft_hf_config = self.server_args.speculative_draft_hf_config
        try:
            eagle_config = getattr(draft_hf_config, "eagle_config", None)
            layer_ids = eagle_config["eagle_aux_hidden_state_layer_ids"]
        except Exception:  # expect: silent-fallback
            layer_ids = None
        return layer_ids

    def read_eagle_layer_ids_logged(self) -> Optional[List[int]]:
        # Quiet: the missing key is caught and said.
        eagle_config = self.server_args.speculative_draft_hf_config.eagle_config
        try:
            return eagle_config["eagle_aux_hidden_state_layer_ids"]
        except KeyError:
            logger.warning("draft config names no eagle_aux_hidden_state_layer_ids; using the model's default")
            return None

    def read_eagle_layer_ids_strict(self) -> List[int]:
        # Quiet: the handler refuses to start.
        eagle_config = self.server_args.speculative_draft_hf_config.eagle_config
        try:
            return eagle_config["eagle_aux_hidden_state_layer_ids"]
        except KeyError as error:
            raise ValueError("draft config names no eagle_aux_hidden_state_layer_ids") from error

    def initialize(self):
        self.load_model()
        self.init_attention_backend()

        # Must run before CUDA graph capture so the graphs replay these layers.
        if self.spec_algorithm.is_eagle3() and not self.is_draft_worker:
            self.model.set_eagle3_layers_to_capture(self.eagle_aux_hidden_state_layer_ids)

        self.init_device_graphs()

    def load_model(self):
        # The class is chosen at run time from the checkpoint's architectures.
        self.model = get_model(model_config=self.model_config, device=self.device)

    def init_attention_backend(self):
        self.attn_backend = self.server_args.attention_backend

    def init_device_graphs(self):
        """Capture device graphs."""
        self.graph_runner = None
        if self.server_args.disable_cuda_graph:
            return
        logger.info("Capture cuda graph begin.")
        self.graph_runner = CudaGraphRunner(self)

    def forward(self, forward_batch):
        if self.graph_runner is not None and self.graph_runner.can_run(forward_batch):
            return self.graph_runner.replay(forward_batch)
        return self.model.forward(
            forward_batch.input_ids, forward_batch.positions, forward_batch
        )
