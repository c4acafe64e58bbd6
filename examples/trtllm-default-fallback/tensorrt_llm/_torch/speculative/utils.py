from .eagle3 import Eagle3SpecMetadata


def get_spec_metadata(spec_config, model_config, max_num_tokens):
    if spec_config.spec_dec_mode.is_eagle3():
        return Eagle3SpecMetadata(num_layers=model_config.num_hidden_layers, max_num_tokens=max_num_tokens,
                                  layers_to_capture=spec_config.eagle3_layers_to_capture)
    return None
