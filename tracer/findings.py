"""Findings and the catalogue of rule slugs (``tracer rules [SLUG]``).

Slugs are an interface: suppressions, baselines and CI key on them.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Finding:
    slug: str
    severity: str  # error | warning | info
    protocol: str
    entry: str | None  # entry class qualname; None for runner-side findings
    file: str
    line: int
    col: int
    message: str
    hint: str
    chain: tuple[str, ...] = ()
    entries: tuple[str, ...] = field(default=())  # every entry class affected (deduplicated findings)

    def sort_key(self):
        return (self.file, self.line, self.col, self.slug, self.entry or "")


@dataclass(frozen=True)
class Rule:
    slug: str
    severity: str
    summary: str
    what: str
    why: str
    example: str
    fix: str


RULES: dict[str, Rule] = {r.slug: r for r in [
    Rule("missing-setter", "info",
         "the entry class offers no capture setter",
         "Reports an entry class whose MRO has no method with the protocol's setter name.",
         "The runner raises (or silently disables the feature) when a draft model is used with this "
         "target. This is a support-matrix entry, not a bug in itself.",
         "class FooForCausalLM(nn.Module):  # no set_eagle3_layers_to_capture\n    ...\nEntryClass = FooForCausalLM",
         "Add the setter (usually by delegating to the inner model) if the model should support the protocol."),
    Rule("broken-delegation", "error",
         "a hop calls the setter on an attribute whose class does not have it",
         "Follows `self.<attr>.<setter>(...)` to the class assigned to `self.<attr>` and reports when that "
         "class (including its bases) defines no such method; also when a `hasattr` guard silently skips the call.",
         "Either the call raises AttributeError at start-up, or (behind `hasattr`) nothing is captured and the "
         "draft receives no aux hidden states: acceptance collapses without an error.",
         "def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
         "    self.language_model.set_eagle3_layers_to_capture(layer_ids)  # language_model is a FooModel without it",
         "Delegate to an object that implements the setter (often `self.language_model` rather than "
         "`self.language_model.model`), or implement it on the inner class."),
    Rule("dead-write", "error",
         "the setter writes a state attribute that no method of its owner reads",
         "Reports a write of the protocol's state attribute (e.g. `self.model.layers_to_capture`) on a class "
         "none of whose methods (forward loops) read `self.<attribute>`.",
         "The layer ids are stored where no decoder loop looks, so nothing is captured.",
         "self.model.layers_to_capture = [val + 1 for val in layer_ids]  # FooModel.forward never reads it",
         "Write the attribute on the object whose forward loop reads it, or make the loop read it."),
    Rule("ids-dropped", "error",
         "the setter is called without the layer ids",
         "Reports a delegating hop or a runner call site that calls the setter with no arguments.",
         "Without ids every setter falls back to its default layers (`[2, n//2, n-3]`) whatever the draft "
         "checkpoint was trained on (sglang #22836).",
         "def set_eagle3_layers_to_capture(self, layer_ids=None):\n    self.language_model.set_eagle3_layers_to_capture()",
         "Pass the ids through: `self.language_model.set_eagle3_layers_to_capture(layer_ids)`."),
    Rule("dead-default", "warning",
         "a model overrides a default-layer method the runner never calls",
         "Lists the protocol's default-layer methods the runner calls (e.g. vLLM's "
         "`get_eagle3_default_aux_hidden_state_layers`) and reports an entry class that defines "
         "another one (`get_eagle3_aux_hidden_state_layers`): its body never runs.",
         "When the draft config names no ids the runner uses the default the interface gives, not the "
         "layers the model's author chose; the override reads as if it mattered, so nobody notices.",
         "def get_eagle3_aux_hidden_state_layers(self):  # the runner calls get_eagle3_default_...\n"
         "    return (2, n // 2, n - 3)",
         "Rename the override to the method the runner calls, or delete it."),
    Rule("flag-not-set", "error",
         "forward hands aux states on only under a flag the setter path never sets",
         "Reports a class on the chain whose methods read the protocol's output flag "
         "(`self.capture_aux_hidden_states`) while no setter on the path sets it.",
         "The inner model captures the layers but the top forward never passes them to the logits "
         "processor, so the draft sees none.",
         "def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
         "    self.model.layers_to_capture = [i + 1 for i in layer_ids]  # no self.capture_aux_hidden_states = True",
         "Set `self.capture_aux_hidden_states = True` in the setter."),
    Rule("silent-fallback", "warning",
         "a default layer list is used without any log line",
         "Reports an assignment of a fallback layer list in a branch taken when the ids are None, with no "
         "logging or warning call in that branch.",
         "When the draft config names no ids, the fallback layers are used and nothing says so: acceptance can "
         "drop to ~1% with no clue in the logs (vllm #50170).",
         "if layer_ids is None:\n    self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]",
         "Log the fallback (`logger.warning(\"EAGLE-3: no layer ids in the draft config; using %s\", ...)`)."),
    Rule("call-order", "error",
         "the runner sets the configured ids only after CUDA-graph capture",
         "Walks the runner's start-up in source order from the roots named in the protocol pack and reports "
         "a call with ids that runs after CUDA graphs are captured.",
         "Replayed graphs keep whatever layers an earlier call set (often the fallback), so decode captures "
         "other layers than prefill (sglang #22836).",
         "self.init_device_graphs()\nself.model.set_eagle3_layers_to_capture(ids)  # too late for the graphs",
         "Call the setter with the configured ids before any CUDA-graph capture."),
    Rule("unresolved", "warning",
         "a hop of the chain could not be traced",
         "Reports the hop where static resolution stopped (an attribute built by a factory or registry, "
         "a base class outside the tree, an inheritance cycle) and why.",
         "tracer never reports clean what it did not trace: the model's verdict is `unknown`.",
         "self.language_model = MODEL_REGISTRY[config.arch](config)\n"
         "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
         "Assign the attribute from a class (or annotate it: `self.language_model: FooForCausalLM`)."),
    Rule("stale-layer-markers", "error",
         "layer tags from an earlier setter call are never cleared",
         "Reports a setter that tags the chosen decoder layers (`setattr(layer, \"_is_layer_to_capture\", True)`) "
         "without ever clearing earlier tags, in a release whose runner calls the setter more than once.",
         "Tags set by an earlier call (often the no-id fallback) stay: the loop captures the union of both "
         "layer lists, so the draft receives more aux states than it was trained on (seen on an H200 with "
         "sglang 0.5.6 Qwen3-MoE: ids [0,2,4] captured the outputs of [0,1,2,4]).",
         "def set_eagle3_layers_to_capture(self, layers_to_capture):\n"
         "    self.layers_to_capture = layers_to_capture\n"
         "    for layer_id in self.layers_to_capture:\n"
         "        setattr(self.layers[layer_id], \"_is_layer_to_capture\", True)",
         "Clear every layer's tag first (`for layer in self.layers: layer._is_layer_to_capture = False`)."),
    Rule("input-error", "error",
         "a file could not be read or parsed",
         "Reports files that are not valid Python (syntax errors, NUL bytes, bad encodings), unreadable, too "
         "large, or links that loop or leave the root.",
         "Models defined in such files get no verdict from them; every other file's results stay complete.",
         "def broken(:\n    pass",
         "Fix the file, or exclude it."),
]}


def rule_text(rule: Rule) -> str:
    return "\n".join([
        f"# {rule.slug} ({rule.severity})",
        "",
        rule.summary[0].upper() + rule.summary[1:] + ".",
        "",
        "## What it does",
        rule.what,
        "",
        "## Why is this bad?",
        rule.why,
        "",
        "## Example",
        "```python",
        rule.example,
        "```",
        "",
        "## Fix",
        rule.fix,
    ])


SEVERITY_ORDER = {"info": 0, "warning": 1, "error": 2}
