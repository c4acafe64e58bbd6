"""Run the forward pass of a model with CUDA graphs (tracer example)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from sglang.srt.model_executor.model_runner import ModelRunner


class CudaGraphRunner:
    """A CudaGraphRunner runs the forward pass of a model with cuda graph."""

    def __init__(self, model_runner: ModelRunner):
        self.model_runner = model_runner
        self.device = model_runner.device
        self.graphs = {}
        self.output_buffers = {}
        self.capture_bs = [1, 2, 4, 8]
        self.input_ids = torch.zeros((max(self.capture_bs),), dtype=torch.int64)
        self.positions = torch.zeros((max(self.capture_bs),), dtype=torch.int64)

        # Capture
        self.capture()

    def capture(self) -> None:
        for bs in self.capture_bs:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = self.model_runner.model.forward(
                    self.input_ids[:bs], self.positions[:bs], None
                )
            self.graphs[bs] = graph
            self.output_buffers[bs] = out

    def can_run(self, forward_batch) -> bool:
        return forward_batch.batch_size in self.graphs

    def replay(self, forward_batch):
        bs = forward_batch.batch_size
        self.input_ids[:bs].copy_(forward_batch.input_ids)
        self.positions[:bs].copy_(forward_batch.positions)
        self.graphs[bs].replay()
        return self.output_buffers[bs]
