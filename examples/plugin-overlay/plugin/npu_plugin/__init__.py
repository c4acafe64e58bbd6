"""A hardware plugin of vLLM (example, vllm-ascend's shape): entry points in its metadata,
models registered by call, its own worker and runner subclass."""


def register():
    return "npu_plugin.platform.NPUPlatform"


def register_model():
    from vllm.model_executor.models.registry import ModelRegistry

    # replaces the host's Mixtral row: the plugin's class is not SupportsEagle3
    ModelRegistry.register_model("MixtralForCausalLM", "npu_plugin.models.mixtral:NPUMixtralForCausalLM")
