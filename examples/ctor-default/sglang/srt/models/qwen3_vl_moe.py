"""Qwen3-VL-MoE: passes its own language_model_cls default up (tracer example)."""

from sglang.srt.models.llama import LlamaModel
from sglang.srt.models.qwen3_vl import Qwen3VLForConditionalGeneration


class Qwen3MoeLLMModel(LlamaModel):
    pass


class Qwen3VLMoeForConditionalGeneration(Qwen3VLForConditionalGeneration):
    def __init__(self, config, quant_config=None, prefix: str = "", language_model_cls=Qwen3MoeLLMModel) -> None:
        super().__init__(config, quant_config, prefix, language_model_cls=language_model_cls)


EntryClass = Qwen3VLMoeForConditionalGeneration
