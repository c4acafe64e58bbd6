"""Checks for protocols whose ids travel in a forward argument (a metadata object handed down to the
decoder layers, which call its capture hook), and for registries that register a name twice.

The argument chain reuses the catalogue's slugs where the failure is the same: the metadata dropped on
the way (in ``**kwargs``) is a broken delegation, a hook nobody calls is a dead write, the default used
whenever the config names no ids is a silent fallback, a hook on one branch only is
capture-skipped-on-branch. Those variants live here (``VARIANTS``) and are merged into their checks;
``duplicate-registration`` is new.
"""

from __future__ import annotations

from tracer.checks import Check, Example, example
from tracer.checks.argument_trees import PROTOCOL, argument_tree
from tracer.checks.config_trees import marked

_REGISTER_TWICE = ("tensorrt_llm/_torch/models/modeling_qwen3_next.py", '''from torch import nn

from .modeling_utils import DecoderModelForCausalLM, register_auto_model
from .modeling_qwen3 import Qwen3Model


@register_auto_model("Qwen3ForCausalLM")  # expect: duplicate-registration
class Qwen3NextForCausalLM(DecoderModelForCausalLM):

    def __init__(self, model_config):
        super().__init__(Qwen3Model(model_config), config=model_config)
''')

DUPLICATE_REGISTRATION = Check(
    slug="duplicate-registration", severity="warning", stage="entries",
    summary="one architecture name is registered for two classes",
    what="Reads the pack's model registry (decorators such as `@register_auto_model(\"Arch\")`, or "
         "`TABLE.update({...})` rows) and reports a name registered a second time for another class, at the "
         "later registration.",
    why="Only one class is ever built for the name: the registration that runs last wins, which for decorators "
        "depends on the order the model modules are imported. The other class (and whatever capture its chain "
        "does) is dead code for every checkpoint naming that architecture, and a change of import order "
        "silently switches which one runs (TensorRT-LLM registers `MistralForCausalLM` twice).",
    example='@register_auto_model("MistralForCausalLM")\nclass MistralForCausalLM(...): ...\n\n'
            '# another module\n@register_auto_model("MistralForCausalLM")\nclass Mistral3ForCausalLM(...): ...',
    fix="Register each architecture name once; give the other class its own name (or delete it).",
    messages={"decorator": "{name} is registered for {first} ({first_place}) and again for {last} here: the "
                           "module imported last wins, so one of the two classes is never built",
              "table": "{name} is registered for {first} ({first_place}) and again for {last} here: the later "
                       "row replaces the earlier one, so {first} is never built for it"},
    hints={"": "Register {name} once; give the other class an architecture name of its own."},
    fires=(example(*argument_tree(), _REGISTER_TWICE, protocol=PROTOCOL),),
    quiet=(example(*argument_tree(), protocol=PROTOCOL),),
)

CHECKS = (DUPLICATE_REGISTRATION,)


_TARGET = {"architectures": ["Qwen3ForCausalLM"], "num_hidden_layers": 32, "hidden_size": 8}


def _draft(ids: list[int]) -> dict[str, object]:
    return {"architectures": ["Eagle3LlamaForCausalLM"], "hidden_size": 8, "eagle_aux_hidden_state_layer_ids": ids}


def _fires(**parts: str) -> Example:
    return example(*argument_tree(**parts), protocol=PROTOCOL)


# slug -> (messages, hints, examples that fire, examples that stay quiet), merged into the slug's check
VARIANTS: dict[str, tuple[dict[str, str], dict[str, str], tuple[Example, ...], tuple[Example, ...]]] = {
    "missing-setter": (
        {"argument": "{entry_name}'s forward takes no {param} (nor **kwargs): {protocol} is unsupported"},
        {"argument": "Accept {param} in the forward and hand it to the inner model's forward."},
        (), ()),
    "broken-delegation": (
        {"argument": "{method} holds {param} ({how}) but calls {callee} without it: {target} never gets it, "
                     "so no layer calls {param}.{hook}() and nothing is captured for {entry_name}"},
        {"argument": "Pass {param}={param} to {callee} (and call {param}.{hook}(...) in {target})."},
        (_fires(model_loop="swallowed"),), (_fires(),)),
    "dead-write": (
        {"hook-uncalled": "{method} hands {param} to {target} ({callee}), but nothing it runs calls "
                          "{param}.{hook}(): the draft reads a capture buffer no layer wrote, for {entry_name}",
         "argument-unused": "{method} takes {param} but neither calls {param}.{hook}() nor hands it to any "
                            "call: nothing is captured for {entry_name}"},
        {"hook-uncalled": "Call {param}.{hook}(self.layer_idx, hidden_states, residual) in {target} after the "
                          "layer ran.",
         "argument-unused": "Hand {param} to the inner model's forward, down to the decoder layers."},
        (_fires(layer_hook="never"),), (_fires(),)),
    "unresolved": (
        {"argument": "cannot follow {param} into {callee}: {why}"},
        {"argument": "Assign {receiver}'s object from a class of the tree, so the chain can be traced."},
        (), ()),
    "silent-fallback": (
        {"default-field": "{owner_name}.{method} sets {field} to {value} whenever the config names no ids, "
                          "and nothing is logged"},
        {"default-field": "Log a warning naming the default layers when the config names none (or refuse to "
                          "start), so a draft trained on other layers is noticed."},
        (_fires(default_log="silent"),), (_fires(),)),
    "fallback-triggered": (
        {"default-field": "{owner_name}.{method} sets {field} = {stored} for this target when the executor "
                          "names no ids: the draft's ids {ids} (the outputs of layers {trained}) are not what "
                          "it gets, the outputs of layers {effective}"},
        {"default-field": "Configure the executor's capture layers (EagleDecodingConfig.eagle3_layers_to_capture "
                          "= {ids}), or train the draft on the outputs of layers {effective}."},
        (example(*marked(argument_tree(), "tensorrt_llm/_torch/speculative/eagle3.py",
                         "self.layers_to_capture = (1, self.num_layers", "fallback-triggered"),
                 protocol=PROTOCOL, target_config=_TARGET, draft_config=_draft([2, 16, 29])),),
        (example(*argument_tree(), protocol=PROTOCOL, target_config=_TARGET, draft_config=_draft([1, 15, 28])),)),
    "capture-skipped-on-branch": (
        {"argument": "{method}: when `{condition}`, the layer runs without calling {param}.{hook}() (it is "
                     "called on the other branch only, line {capture_line}), so those layers are not captured"},
        {"argument": "Call {param}.{hook}() on this branch too, or turn the option off for the layers that "
                     "capture."},
        (_fires(layer_hook="branch"),), (_fires(), _fires(layer_hook="branch-guarded"))),
}

__all__ = ["CHECKS", "DUPLICATE_REGISTRATION", "VARIANTS"]
