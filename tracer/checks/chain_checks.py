"""Checks on one entry class's chain: setter -> delegations -> state write -> readers."""

from __future__ import annotations

from tracer.checks import Check, example
from tracer.checks.config_trees import BAR_WRITE, PROTOCOL, config_tree, marked
from tracer.checks.trees import DECODER, EARLY_RETURN_DECODER, SETTER, mark, model, model_file, runner

_WRAPPER = '''
class FooVLForConditionalGeneration(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.language_model = FooForCausalLM(config)
        self.vision_tower = VisionTower(config)

    def set_eagle3_layers_to_capture(self, layer_ids=None):
        {call}


class VisionTower(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.blocks = nn.ModuleList([])
'''

MISSING_SETTER = Check(
    slug="missing-setter", severity="info", stage="chains",
    summary="the entry class offers no capture setter",
    what="Reports an entry class whose MRO has no method with the protocol's setter name.",
    why="The runner raises (or silently disables the feature) when a draft model is used with this target. "
        "This is a support-matrix entry, not a bug in itself.",
    example="class FooForCausalLM(nn.Module):  # no set_eagle3_layers_to_capture\n    ...\nEntryClass = FooForCausalLM",
    fix="Add the setter (usually by delegating to the inner model) if the model should support the protocol.",
    messages={"": "{entry_name} has no {setter} (not in its class or any base): {protocol} is unsupported",
              "undeclared": "{entry_name} defines {setter} but does not declare {bases}: the runner refuses it, "
                            "so {protocol} is unsupported",
              "config": "no config builder writes the layer ids for {architectures}: {protocol} is unsupported "
                        "for {entry_name}"},
    hints={"": "Implement {setter} on {entry_name}, delegating to the inner language model.",
           "config": "Write the ids in the config builder picked for {architectures}, and read them in the "
                     "decoder's __init__.",
           "undeclared": "Declare {bases} among the bases of {entry_name}."},
    fires=(example(model_file("foo", model()), model_file("bar", mark(model("Bar", setter=""),
                                                                    "class BarForCausalLM", "missing-setter"))),
           # ids on the config: no builder writes them for Bar's architectures
           example(*marked(config_tree(bar_write="pass"), "lmdeploy/pytorch/models/bar.py", "class BarForCausalLM",
                           "missing-setter"), protocol=PROTOCOL)),
    quiet=(example(model_file("foo", model())),),
)

BROKEN_DELEGATION = Check(
    slug="broken-delegation", severity="error", stage="chains",
    summary="a hop calls a method the receiver's class does not have",
    what="Resolves every call a setter makes with the layer ids against the class of its receiver (the class "
         "assigned to `self.<attr>`, through the MRO) and reports a method that class does not define, with the "
         "closest name it does define; also a `hasattr` guard that silently skips the call.",
    why="torch's `nn.Module.__getattr__` finds only parameters, buffers and sub-modules: the call raises "
        "AttributeError at start-up, or (behind `hasattr`) nothing is captured and the draft receives no aux "
        "hidden states, so acceptance collapses without an error.",
    example="def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
            "    self.language_model.set_eagle3_layer_to_capture(layer_ids)  # one letter off",
    fix="Delegate to an object that implements the setter (often `self.language_model` rather than "
        "`self.language_model.model`), spelled as it is defined there, or implement it on the inner class.",
    messages={
        "": "{owner_name} delegates {setter} to {why}",
    },
    hints={"": "Delegate to an object whose class defines {setter}, or implement it there."},
    fires=(
        example(model_file("foo", model(extra=_WRAPPER.replace(
            "{call}", "self.vision_tower.set_eagle3_layers_to_capture(layer_ids)  # expect: broken-delegation"),
            entry="[FooForCausalLM, FooVLForConditionalGeneration]")), note="delegates to the vision tower"),
        example(model_file("foo", model(extra=_WRAPPER.replace(
            "{call}", "self.language_model.set_eagle3_layer_to_capture(layer_ids)  # expect: broken-delegation"),
            entry="[FooForCausalLM, FooVLForConditionalGeneration]")), note="a misspelled method"),
    ),
    quiet=(example(model_file("foo", model(extra=_WRAPPER.replace(
        "{call}", "self.language_model.set_eagle3_layers_to_capture(layer_ids)"),
        entry="[FooForCausalLM, FooVLForConditionalGeneration]"))),),
)

_NO_READER = DECODER.replace("            if i in self.layers_to_capture:\n"
                             "                aux_hidden_states.append(hidden_states)\n", "")

DEAD_WRITE = Check(
    slug="dead-write", severity="error", stage="chains",
    summary="the ids are stored where no forward that runs reads them",
    what="Follows the stored ids to the object that holds them and reports when no method that runs in that "
         "object's forward reads the attribute (including a write under a misspelled name). Every branch of the "
         "setter is judged: the no-ids branch's default layers, stored under a name no forward reads, are a dead "
         "write on that branch even when the branch with ids is fine.",
    why="The layer ids are stored where no decoder loop looks, so nothing is captured.",
    example="self.model.layers_to_capture = [val + 1 for val in layer_ids]  # FooModel.forward never reads it",
    fix="Write the attribute on the object whose forward loop reads it, or make the loop read it.",
    messages={
        "no-reader": "{target} is written, but no forward that runs for {state_owner} reads "
                     "self.{attr}{cut}: nothing is captured for {entry_name}",
        "near-miss": "{target} is written, but the decoder loop reads {attribute}: nothing is captured",
        "branch": "{target} is written {branch}, but no forward that runs for {state_owner} reads self.{attr}: "
                  "a draft on that path gets nothing captured from {entry_name}",
        "config-unread": "{builder} writes {target} for configs naming {accepts}, but no __init__ reached from "
                         "{entry_name} reads {config_attr}: nothing is captured for {entry_name}",
    },
    hints={"no-reader": "Write {attribute} on the object whose forward loop reads it.",
           "config-unread": "Read {config_attr} from the config in the decoder's __init__ and capture those layers "
                            "in its forward (or map these configs to a class that does).",
           "near-miss": "Write {attribute} (check the spelling).",
           "branch": "Write {attribute} on this branch too, as the other branch does (check the spelling)."},
    fires=(
        example(model_file("foo", mark(model(decoder=_NO_READER), "layers_to_capture = [2,", "dead-write"))),
        example(model_file("foo", model(setter=SETTER.replace(
            "self.model.layers_to_capture = [val + 1 for val in layer_ids]",
            "self.model.layers_to_captur = [val + 1 for val in layer_ids]  # expect: dead-write")))),
        # the no-ids branch stores its defaults under a misspelled name: judged on its own branch
        example(model_file("foo", model(setter=SETTER.replace(
            "self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]",
            "self.model.layer_to_capture = [2, num_layers // 2, num_layers - 3]  # expect: dead-write"))),
            note="the no-ids branch"),
        # the builder picked for model type kimi_k2 writes the ids; the class its checkpoints name never reads them
        example(*marked(config_tree(bar_read="self.norm = nn.Identity()"), "lmdeploy/pytorch/configurations/builder.py",
                        BAR_WRITE, "dead-write"), protocol=PROTOCOL),
    ),
    quiet=(example(model_file("foo", model())), example(*config_tree(), protocol=PROTOCOL)),
)

IDS_DROPPED = Check(
    slug="ids-dropped", severity="error", stage="chains, runner",
    summary="the setter is called without the layer ids",
    what="Reports a delegating hop or a runner call site that calls the setter with no arguments (or hands it "
         "the model's own default layers instead of the draft's ids).",
    why="Without ids every setter falls back to its default layers (`[2, n//2, n-3]`) whatever the draft "
        "checkpoint was trained on (sglang #22836).",
    example="def set_eagle3_layers_to_capture(self, layer_ids=None):\n    self.language_model.set_eagle3_layers_to_capture()",
    fix="Pass the ids through: `self.language_model.set_eagle3_layers_to_capture(layer_ids)`.",
    messages={
        "hop": "{owner_name}.{method} calls {callee}() without {ids_param}: the next setter always uses its "
               "fallback ({fallback}) whatever the draft config says",
        "runner": "{caller} calls {setter}() without layer ids{when}: every model's setter falls back to "
                  "{fallback} whatever the draft config says",
        "runner-default": "{caller} calls {setter}({default}()): the model's default layers are captured "
                          "whatever layer ids the draft config names",
        "ignored": "{owner_name}.{method} stores {target} without using its ids: the same layers are captured "
                   "whatever the draft config says",
    },
    hints={"hop": "Pass the ids on: {callee}({ids_param}).",
           "runner": "Pass the configured ids (or do not call the setter here).",
           "runner-default": "Read the ids from the draft config and use the model's default only when it names none.",
           "ignored": "Store the ids the setter is given (the default only when it is given none)."},
    fires=(example(model_file("foo", model(extra=_WRAPPER.replace(
        "{call}", "self.language_model.set_eagle3_layers_to_capture()  # expect: ids-dropped"),
        entry="[FooForCausalLM, FooVLForConditionalGeneration]"))),),
    quiet=(example(model_file("foo", model(extra=_WRAPPER.replace(
        "{call}", "self.language_model.set_eagle3_layers_to_capture(layer_ids)"),
        entry="[FooForCausalLM, FooVLForConditionalGeneration]"))),),
)

_NO_FLAG = SETTER.replace("        self.capture_aux_hidden_states = True\n", "")

FLAG_NOT_SET = Check(
    slug="flag-not-set", severity="error", stage="chains",
    summary="forward hands aux states on only under a flag the setter path never sets",
    what="Reports a class on the chain whose forward passes the captured states on only under the protocol's "
         "output flag (`self.capture_aux_hidden_states`) while no setter on the path sets it.",
    why="The inner model captures the layers but the top forward never passes them to the logits processor, "
        "so the draft sees none.",
    example="def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
            "    self.model.layers_to_capture = [i + 1 for i in layer_ids]  # no self.capture_aux_hidden_states = True",
    fix="Set `self.capture_aux_hidden_states = True` in the setter.",
    messages={"": "{reader} passes aux hidden states on only when self.{flag} is set ({where}), but {owner_name}."
                  "{method} {sets}"},
    hints={"": "Set self.{flag} = True in {owner_name}.{method}."},
    fires=(example(model_file("foo", model(setter=mark(_NO_FLAG, "def set_eagle3", "flag-not-set")))),),
    quiet=(example(model_file("foo", model())),),
)

_SILENT = mark(SETTER.replace('            logger.warning("no layer ids given; capturing the default layers")\n', ""),
               "layers_to_capture = [2,", "silent-fallback")

_RUNNER_READ = '''
    def initialize(self):
        self.ids = None
        try:
            eagle_config = getattr(self.draft_config, "eagle_config", None)
            self.ids = eagle_config["eagle_aux_hidden_state_layer_ids"]
        except Exception:{mark}
            {handler}
        self.model.set_eagle3_layers_to_capture(self.ids)
'''
_RUNNER_EXCEPT = _RUNNER_READ.format(mark="  # expect: silent-fallback", handler="self.ids = None")
_RUNNER_EXCEPT_LOGGED = _RUNNER_READ.format(
    mark="", handler='logger.warning("no eagle_aux_hidden_state_layer_ids in the draft config")')

_RUNNER_GUESS_BODY = '''"""DFlash layer choice (example)."""


def build_target_layer_ids(num_target_layers, num_draft_layers):
    return [1 + i * (num_target_layers - 4) // max(num_draft_layers - 1, 1) for i in range(num_draft_layers)]


class DraftConfig:
    def resolve_target_layer_ids(self, target_num_layers, draft_num_layers):
        if self.target_layer_ids is None:{log}
            return build_target_layer_ids(target_num_layers, draft_num_layers){mark}
        return list(self.target_layer_ids)
'''
_RUNNER_GUESS = _RUNNER_GUESS_BODY.format(log="", mark="  # expect: silent-fallback")
_RUNNER_GUESS_LOGGED = _RUNNER_GUESS_BODY.format(
    log='\n            logger.warning("no target_layer_ids in the draft config; guessing")', mark="")

SILENT_FALLBACK = Check(
    slug="silent-fallback", severity="warning", stage="chains, runner",
    summary="a default layer list is used without any log line",
    what="Reports an assignment of a fallback layer list in a setter branch taken when the ids are None, with no "
         "call of the pack's logging functions in that branch. On the runner side (the pack's runner modules) it "
         "reports a `try` around a read of the ids' config key (`[config] runner_ids_keys`) whose handler "
         "neither re-raises nor logs, and a branch that calls one of the pack's guessers (`[runner] "
         "fallback_calls`, `[defaults] methods`) with no log.",
    why="When the draft config names no ids, the fallback layers are used and nothing says so: acceptance can "
        "drop to ~1% with no clue in the logs (vllm #50170). The runner is often where it happens: SGLang reads "
        "the draft's EAGLE-3 ids under `except Exception: ... = None`, so a draft without the key (or a typo in "
        "it) gets the setter's default; a DFlash draft without `target_layer_ids` gets a guessed list of the "
        "right length and the wrong layers (sglang #37475).",
    example="if layer_ids is None:\n    self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]\n\n"
            "# runner\ntry:\n    ids = eagle_config[\"eagle_aux_hidden_state_layer_ids\"]\nexcept Exception:\n"
            "    ids = None",
    fix='Log the fallback (`logger.warning("EAGLE-3: no layer ids in the draft config; using %s", ...)`); in the '
        "runner catch only the missing key, and log (or refuse to start) when it is missing.",
    messages={"": "{owner_name}.{method} falls back to {value} when {param} is None, and nothing is logged",
              "runner-except": "{function} reads the draft config's `{key}` under `{condition}`, which makes it "
                               "{value} and logs nothing: a draft config without the key (or with a typo in it) "
                               "silently gets {fallback}",
              "runner-branch": "{function} takes {value} when `{condition}` instead of the draft's ids, and logs "
                               "nothing: a draft config that names no `{key}` silently gets those layers"},
    hints={"": "Log a warning naming the fallback layers, so a draft config without ids is noticed.",
           "runner-except": "Catch only the missing key (KeyError), and log a warning naming the layers used "
                            "instead, or refuse to start.",
           "runner-branch": "Log a warning naming the guessed layers, so a draft config without ids is noticed."},
    fires=(example(model_file("foo", model(setter=_SILENT))),
           example(model_file("foo", model()), runner(_RUNNER_EXCEPT)),
           example(model_file("foo", model()), ("sglang/srt/speculative/guess.py", _RUNNER_GUESS),
                   protocol="sglang-dflash")),
    quiet=(example(model_file("foo", model())),
           example(model_file("foo", model()), runner(_RUNNER_EXCEPT_LOGGED)),
           example(model_file("foo", model()), ("sglang/srt/speculative/guess.py", _RUNNER_GUESS_LOGGED),
                   protocol="sglang-dflash")),
)

UNRESOLVED = Check(
    slug="unresolved", severity="warning", stage="chains",
    summary="a hop of the chain could not be traced",
    what="Reports the hop where static resolution stopped (an attribute built by a factory chosen at run time, "
         "a base class outside the tree, an inheritance cycle) and why.",
    why="tracer never reports clean what it did not trace: the model's verdict is `unknown`.",
    example="self.language_model = MODEL_REGISTRY[config.arch](config)\n"
            "self.language_model.set_eagle3_layers_to_capture(layer_ids)",
    fix="Assign the attribute from a class (or annotate it: `self.language_model: FooForCausalLM`).",
    messages={
        "receiver": "cannot follow {callee}: the class of {receiver} is unknown ({why})",
        "state-owner": "cannot tell which class owns {target}: {why}",
        "mro": "{entry_name}: cannot tell whether {setter} exists: {why}",
        "cycle": "delegation cycle: {owner_name}.{method} is reached again from itself",
        "body": "{why}",
    },
    hints={"receiver": "Assign {receiver} from a class, or annotate it, so the chain can be traced.",
           "state-owner": "Assign {receiver} from a class so its readers can be found.",
           "mro": "Make the base classes resolvable inside the scanned tree.",
           "cycle": "Break the cycle: one class must write the state attribute.",
           "body": "Make the setter write {attribute} or delegate to an object that does."},
    fires=(example(model_file("foo", model(extra=_WRAPPER.replace(
        "self.language_model = FooForCausalLM(config)", "self.language_model = MODELS[config.arch](config)").replace(
        "{call}", "self.language_model.set_eagle3_layers_to_capture(layer_ids)  # expect: unresolved"),
        entry="[FooForCausalLM, FooVLForConditionalGeneration]"))),),
    quiet=(example(model_file("foo", model(extra=_WRAPPER.replace(
        "{call}", "self.language_model.set_eagle3_layers_to_capture(layer_ids)"),
        entry="[FooForCausalLM, FooVLForConditionalGeneration]"))),),
)

_VLLM_FILES = (
    ("vllm/__init__.py", ""),
    ("vllm/version.py", '__version__ = "0.0.1"\n'),
    ("vllm/model_executor/__init__.py", ""),
    ("vllm/model_executor/models/__init__.py", ""),
    ("vllm/model_executor/models/registry.py", '_TEXT_GENERATION_MODELS = {"FooForCausalLM": ("foo", "FooForCausalLM")}\n'
                                              "_MULTIMODAL_MODELS = {}\n"),
    ("vllm/model_executor/models/interfaces.py", '''
class SupportsEagle3:
    def set_aux_hidden_state_layers(self, layers):
        self.model.aux_hidden_state_layers = layers

    def get_eagle3_default_aux_hidden_state_layers(self):
        num_layers = len(self.model.layers)
        return (2, num_layers // 2, num_layers - 3)
'''),
    ("vllm/v1/__init__.py", ""),
    ("vllm/v1/worker/__init__.py", ""),
    ("vllm/v1/worker/gpu_model_runner.py", '''
class GPUModelRunner:
    def load_model(self):
        self.model = get_model()
        ids = self.speculative_config.eagle_aux_hidden_state_layer_ids
        if not ids:
            ids = self.model.get_eagle3_default_aux_hidden_state_layers()
        self.model.set_aux_hidden_state_layers(ids)
'''),
)

_VLLM_MODEL = '''
from torch import nn

from vllm.model_executor.models.interfaces import SupportsEagle3


class FooModel(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layers = nn.ModuleList([])
        self.aux_hidden_state_layers = ()

    def forward(self, hidden_states):
        aux_hidden_states = []
        for idx, layer in enumerate(self.layers):
            if idx in self.aux_hidden_state_layers:
                aux_hidden_states.append(hidden_states)
            hidden_states = layer(hidden_states)
        return hidden_states, aux_hidden_states


class FooForCausalLM(nn.Module, SupportsEagle3):
    def __init__(self, config):
        super().__init__()
        self.model = FooModel(config)
{extra}'''

DEAD_DEFAULT = Check(
    slug="dead-default", severity="warning", stage="chains",
    summary="a model overrides a default-layer method the runner never calls",
    what="Lists the protocol's default-layer methods the runner calls (e.g. vLLM's "
         "`get_eagle3_default_aux_hidden_state_layers`) and reports an entry class that defines another one "
         "(`get_eagle3_aux_hidden_state_layers`): its body never runs.",
    why="When the draft config names no ids the runner uses the default the interface gives, not the layers the "
        "model's author chose; the override reads as if it mattered, so nobody notices.",
    example="def get_eagle3_aux_hidden_state_layers(self):  # the runner calls get_eagle3_default_...\n"
            "    return (2, n // 2, n - 3)",
    fix="Rename the override to the method the runner calls, or delete it.",
    messages={"": "{owner_name}.{method} is never called: the runner asks {runner_method}(){where}, so the "
                  "default layers defined here are dead code"},
    hints={"": "Rename it to {runner_method} (or delete it)."},
    fires=(example(*_VLLM_FILES, ("vllm/model_executor/models/foo.py", _VLLM_MODEL.replace("{extra}", '''
    def get_eagle3_aux_hidden_state_layers(self):  # expect: dead-default
        return (1, 2, 3)
''')), protocol="vllm-eagle3"),),
    quiet=(example(*_VLLM_FILES, ("vllm/model_executor/models/foo.py", _VLLM_MODEL.replace("{extra}", '''
    def get_eagle3_default_aux_hidden_state_layers(self):
        return (1, 2, 3)
''')), protocol="vllm-eagle3"),),
)

# the first definition validates and shifts; the second, later in the class body, is the one that runs
_SHADOWED = mark(SETTER, "def set_eagle3", "shadowed-setter") + SETTER.replace("[val + 1 for val in layer_ids]",
                                                                              "list(layer_ids)")

SHADOWED_SETTER = Check(
    slug="shadowed-setter", severity="warning", stage="chains",
    summary="a class body defines the setter twice, and the later one silently replaces the earlier",
    what="Reports a class whose body has two `def` of the setter: Python binds the name to the last one, so the "
         "first (often the validated or shifting one) never runs.",
    why="The code reads as if the first definition mattered; the ids take the path of the second one (in "
        "SGLang 0.5.19-0.5.21 `qwen3_5_text.py` it dropped the +1 shift, so DFlash captured one layer early; "
        "sglang PR 38091).",
    example="class FooForCausalLM(nn.Module):\n    def set_dflash_layers_to_capture(self, ids): ...  # never runs\n"
            "    def set_dflash_layers_to_capture(self, ids): ...",
    fix="Delete one of the definitions (keep the one that is right).",
    messages={"": "{owner_name} defines {setter} {count} times (lines {first} and {last}): the definition at line "
                  "{last} replaces the one at line {first}, which never runs"},
    hints={"": "Keep one definition of {setter} in {owner_name}."},
    fires=(example(model_file("foo", model(setter=_SHADOWED))),),
    quiet=(example(model_file("foo", model())),),
)

_HANDED_ON = """        hidden_states, aux_hidden_states = self.model(hidden_states)
        if self.capture_aux_hidden_states:
            return hidden_states, aux_hidden_states
        return hidden_states"""
_DROPPED = """        result = self.model(hidden_states)
        if self.capture_aux_hidden_states:
            hidden_states, aux_hidden_states = result  # expect: aux-dropped
        else:
            hidden_states = result
        return hidden_states"""

AUX_DROPPED = Check(
    slug="aux-dropped", severity="error", stage="chains",
    summary="the top forward unpacks the captured states and never hands them on",
    what="Reports the forward that runs for the entry class when, under the protocol's output flag "
         "(`if self.capture_aux_hidden_states:`), it binds a name (the captured states) that nothing in the "
         "forward uses again: not returned, not passed to the logits processor, not stored; and, where the "
         "pack names an output key and the methods that copy outputs (a CUDA-graph replay's output copy), "
         "such a method that runs for the entry and never names the key, itself or through the sub-module "
         "it delegates to.",
    why="The setter and the decoder loop work and the layers are captured on every step, but the draft never "
        "receives them: acceptance collapses with no error.",
    example="if self.capture_aux_hidden_states:\n    hidden_states, aux_hidden_states = hidden_states\n"
            "return self.logits_processor(input_ids, hidden_states, self.lm_head, forward_batch)  # aux lost",
    fix="Pass the captured states on, e.g. `self.logits_processor(..., aux_hidden_states)`.",
    messages={"": "{forward} unpacks the captured states into {name} when self.{flag} is set ({where}) and never "
                  "uses {name}: the draft gets no aux hidden states",
              "output-copy": "{forward} copies the model's outputs on the replay path ({path}) without {key!r}: "
                             "the captured states are lost whenever that path runs (a CUDA-graph replay)"},
    hints={"": "hand {name} on in {forward} (to the logits processor or in its return value)",
           "output-copy": "copy {key!r} from the output buffers in {forward}, or delegate to a module whose copy does"},
    fires=(example(model_file("foo", model().replace(_HANDED_ON, _DROPPED))),
           # the CUDA-graph output copy Foo inherits keeps only hidden_states
           example(*marked(config_tree(foo_copy=""), "lmdeploy/pytorch/models/utils.py", "def get_outputs_cudagraph",
                           "aux-dropped"), protocol=PROTOCOL)),
    quiet=(example(model_file("foo", model())), example(*config_tree(), protocol=PROTOCOL)),
)

_TWO_PATHS = '''
class {name}Model(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(config.num_hidden_layers)])
        self.layers_to_capture = []

    def forward(self, hidden_states, forward_batch):
        aux_hidden_states = []
        if forward_batch.can_run_tbo:{mark}
            hidden_states = model_forward_stages(layers=self.layers, hidden_states=hidden_states){capture}
        else:
            for i in range(len(self.layers)):
                if i in self.layers_to_capture:
                    aux_hidden_states.append(hidden_states)
                hidden_states = self.layers[i](hidden_states)
        return hidden_states, aux_hidden_states
'''
_SKIPPING = _TWO_PATHS.replace("{mark}", "  # expect: capture-skipped-on-branch").replace("{capture}", "")
_BOTH_CAPTURE = _TWO_PATHS.replace("{mark}", "").replace("{capture}", "")\
    .replace("layers=self.layers, hidden_states", "layers=self.layers, capture=self.layers_to_capture, hidden_states")
_EARLY_EXIT = DECODER.replace("        aux_hidden_states = []\n", "        aux_hidden_states = []\n"
                              "        if hidden_states is None:\n            return hidden_states, []\n")

_EARLY_RETURN_SKIPS = mark(EARLY_RETURN_DECODER.replace("{extra}", "").replace("{passed}", ""),
                           "if self.fast_prefill_enabled:", "capture-skipped-on-branch")
_EARLY_RETURN_CAPTURES = EARLY_RETURN_DECODER.replace("{extra}", ", capture").replace(
    "{passed}", ", self.layers_to_capture")

CAPTURE_SKIPPED_ON_BRANCH = Check(
    slug="capture-skipped-on-branch", severity="warning", stage="pipeline",
    summary="the forward that captures has a branch that runs the layers and captures nothing",
    what="Reports an `if` in a forward that reads the capture state (the pack's state attribute or a per-layer "
         "marker) where one branch reads it and runs the layers through a `self` container "
         "(`self.layers[i]`), while the other branch runs that same container another way and reads no state; "
         "or an `if` that returns early, through a call on `self`, before the loop over a `self` container that "
         "captures (a call of a helper the chain reads the state in counts as a read: vLLM's "
         "`self._maybe_add_hidden_state(...)`). "
         "The verdict stays `ok`: the chain works on the plain path.",
    why="On the other branch (a two-batch-overlap path, a fused or compiled path, a feature flag) the layers "
        "run and nothing is captured, so the draft gets no aux hidden states whenever the server options select "
        "that branch (SGLang 0.5.23: `forward_batch.can_run_tbo` in qwen2_moe.py, deepseek_v2.py, minimax_m2.py; "
        "vLLM 0.24 to 0.33: `self.fast_prefill_enabled` (kv_sharing_fast_prefill) in gemma4.py).",
    example="if forward_batch.can_run_tbo:\n    hidden_states = model_forward_stages(layers=self.layers, ...)\n"
            "else:\n    for i in range(len(self.layers)):\n        if i in self.layers_to_capture: ...",
    fix="Capture on every branch that runs the layers (hand the capture list to the overlapped path too), or "
        "refuse the option together with speculative decoding.",
    messages={"": "{method}: when `{condition}`, layers run through `{runs}` (line {runs_line}) and "
                  "{attribute} is not read there, so no aux hidden states are captured from them"},
    hints={"": "Capture on this branch too, or disable the option that selects it when speculative decoding is on."},
    fires=(example(model_file("foo", model(decoder=_SKIPPING))),
           example(model_file("foo", model(decoder=_EARLY_RETURN_SKIPS)))),
    quiet=(example(model_file("foo", model())), example(model_file("foo", model(decoder=_BOTH_CAPTURE))),
           example(model_file("foo", model(decoder=_EARLY_EXIT))),
           example(model_file("foo", model(decoder=_EARLY_RETURN_CAPTURES)))),
)


CHECKS = (MISSING_SETTER, BROKEN_DELEGATION, DEAD_WRITE, IDS_DROPPED, FLAG_NOT_SET, SILENT_FALLBACK, UNRESOLVED,
          DEAD_DEFAULT, SHADOWED_SETTER, AUX_DROPPED, CAPTURE_SKIPPED_ON_BRANCH)
