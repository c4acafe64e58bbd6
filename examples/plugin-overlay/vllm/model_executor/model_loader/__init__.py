"""Model loading (example): the class comes from the registry at run time."""


def get_model(vllm_config):
    return None
