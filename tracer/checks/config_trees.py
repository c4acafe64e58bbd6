"""Example trees (LMDeploy-shaped) for ids that travel on the config object.

A registry filled by ``MODULE_MAP.update({...})`` with dotted strings, config builders
picked by ``condition()`` (by architecture or by model type) that write
``hf_config.aux_hidden_state_layers``, and models whose decoder ``__init__`` reads it,
whose forward captures, and whose CUDA-graph output copy keeps ``aux_hidden_states``.
``config_tree(...)`` varies one part, so each example shows exactly the shape it is about.
"""

from __future__ import annotations

PROTOCOL = "lmdeploy-eagle3"

_MODULE_MAP = '''PATH = 'lmdeploy.pytorch.models'
MODULE_MAP = dict()
MODULE_MAP.update({
    'FooForCausalLM': f'{PATH}.foo.FooForCausalLM',
})
MODULE_MAP.update({
    'BarForCausalLM': f'{PATH}.bar.BarForCausalLM',
    'DeepseekV3ForCausalLM': f'{PATH}.bar.BarForCausalLM',
})
'''

_BUILDERS = '''
class AutoModelConfigBuilder:
    _sub_classes = list()

    @classmethod
    def condition(cls, hf_config):
        raise NotImplementedError

    @classmethod
    def build(cls, hf_config, model_path=None, **kwargs):
        return hf_config


class FooModelConfigBuilder(AutoModelConfigBuilder):

    @classmethod
    def condition(cls, hf_config):
        return hf_config.architectures[0] in ['FooForCausalLM']

    @classmethod
    def build(cls, hf_config, model_path=None, spec_method=None, **kwargs):
        if spec_method == 'eagle3':
            n = hf_config.num_hidden_layers
            hf_config.aux_hidden_state_layers = (2, n // 2, n - 3)
        return hf_config


class BarModelConfigBuilder(AutoModelConfigBuilder):

    @classmethod
    def condition(cls, hf_config):
        return getattr(hf_config, 'model_type', None) == 'kimi_k2'

    @classmethod
    def build(cls, hf_config, model_path=None, spec_method=None, **kwargs):
        if spec_method == 'eagle3':
            n = hf_config.num_hidden_layers
            {bar_write}
        return hf_config
'''

_MIXIN = '''
class CudaGraphMixin:
    def get_outputs_cudagraph(self, output_buffers, input_ids, **kwargs):
        outputs = dict()
        outputs['hidden_states'] = output_buffers['hidden_states']
        return outputs
'''

_MODEL = '''from torch import nn

from .utils import CudaGraphMixin


class {name}Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(config.num_hidden_layers)])
        {read}

    def forward(self, hidden_states):
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states)
            hidden_states = layer(hidden_states)
        return dict(hidden_states=hidden_states, aux_hidden_states=aux_hidden_states)


class {name}ForCausalLM(nn.Module, CudaGraphMixin):
    def __init__(self, config, ctx_mgr=None):
        super().__init__()
        self.model = {name}Model(config)

    def forward(self, hidden_states):
        return self.model(hidden_states)
{copy}'''

READ = "self.aux_hidden_state_layers = getattr(config, 'aux_hidden_state_layers', ())"
NO_READ = "self.aux_hidden_state_layers = ()"
COPY = '''
    def get_outputs_cudagraph(self, output_buffers, input_ids, **kwargs):
        outputs = dict(hidden_states=output_buffers['hidden_states'])
        if 'aux_hidden_states' in output_buffers:
            outputs['aux_hidden_states'] = output_buffers['aux_hidden_states']
        return outputs
'''
BAR_WRITE = "hf_config.aux_hidden_state_layers = (1, n // 2, n - 4)"


def config_tree(foo_read: str = READ, foo_copy: str = COPY, bar_read: str = READ, bar_copy: str = COPY,
                bar_write: str = BAR_WRITE) -> tuple[tuple[str, str], ...]:
    """Two models: Foo (builder picked by architecture) and Bar (registered under two
    names; its builder is picked by model type ``kimi_k2``, whose checkpoints the pack
    says name DeepseekV3ForCausalLM)."""
    files = [
        ("lmdeploy/__init__.py", ""),
        ("lmdeploy/version.py", "__version__ = '0.0.0-example'\n"),
        ("lmdeploy/pytorch/models/module_map.py", _MODULE_MAP),
        ("lmdeploy/pytorch/configurations/builder.py", _BUILDERS.replace("{bar_write}", bar_write)),
        ("lmdeploy/pytorch/models/utils.py", _MIXIN),
        ("lmdeploy/pytorch/models/foo.py",
         _MODEL.replace("{name}", "Foo").replace("{read}", foo_read).replace("{copy}", foo_copy)),
        ("lmdeploy/pytorch/models/bar.py",
         _MODEL.replace("{name}", "Bar").replace("{read}", bar_read).replace("{copy}", bar_copy)),
    ]
    return tuple(files)


def marked(files: tuple[tuple[str, str], ...], path: str, text: str, slug: str) -> tuple[tuple[str, str], ...]:
    """The files with ``# expect: slug`` on the first line of ``path`` holding ``text``."""
    out = []
    for name, source in files:
        if name == path:
            lines = source.split("\n")
            index = next(i for i, line in enumerate(lines) if text in line)
            lines[index] += f"  # expect: {slug}"
            source = "\n".join(lines)
        out.append((name, source))
    return tuple(out)


__all__ = ["BAR_WRITE", "COPY", "NO_READ", "PROTOCOL", "READ", "config_tree", "marked"]
