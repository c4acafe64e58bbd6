"""The Transformers modeling backend (example, vLLM 0.33.0's shape)."""

from vllm.model_executor.models.transformers.base import Base


class TransformersForCausalLM(Base): ...


class TransformersEmbeddingModel(Base): ...
