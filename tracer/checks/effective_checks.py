"""Checks that need a target and a draft config: which layers are really captured
(``tracer explain``, ``tracer scan --target-config/--draft-config``)."""

from __future__ import annotations

from tracer.checks import Check, example
from tracer.checks.config_trees import PROTOCOL, config_tree, marked
from tracer.checks.trees import DECODER, DRAFT_1_3_5, DRAFT_NO_IDS, SETTER, TARGET, mark, model, model_file

_FOO = model_file("foo", model())
_CONFIG_TARGET = {"architectures": ["FooForCausalLM"], "num_hidden_layers": 12, "hidden_size": 8}


def _config_draft(ids: list[int]) -> dict[str, object]:
    return {"architectures": ["Eagle3LlamaForCausalLM"], "hidden_size": 8, "eagle_aux_hidden_state_layer_ids": ids}


FALLBACK_TRIGGERED = Check(
    slug="fallback-triggered", severity="warning", stage="effective",
    summary="with these configs the setter's fallback layers are captured",
    what="Evaluates the setter chain on the target and draft configs and reports when the fallback branch runs "
         "(the draft names no ids, names them under a key the runner does not read, or a later call passes "
         "none), or when replayed CUDA graphs capture other layers than the eager path.",
    why="The draft then receives the hidden states of layers it was not trained on; nothing errors, acceptance "
        "collapses (vllm #50170, sglang #22836).",
    example='{"eagle_config": {}}   # draft config.json without eagle_aux_hidden_state_layer_ids',
    fix="Put the ids where the runner reads them (`eagle_config.eagle_aux_hidden_state_layer_ids`), and set "
        "them before CUDA-graph capture.",
    messages={
        "no-ids": "{why}, so the fallback {fallback} runs: layers_to_capture = {layers_to_capture}, capturing "
                  "the outputs of layers {effective}",
        "graph": "CUDA graphs are captured after the call at {where} ({passed}), so replayed graphs capture the "
                 "outputs of layers {graph_layers} while the eager path captures {effective}",
        "config": "{builder} writes {attribute} = {stored} for this target whatever the draft names: the draft's "
                  "ids {ids} (in {convention} convention the outputs of layers {trained}) are never read, and the "
                  "loop captures the outputs of layers {effective}",
    },
    hints={"no-ids": "{hint}",
           "graph": "make the configured setter call before CUDA-graph capture, or pass the ids in the graph "
                    "runner's call",
           "config": "train the draft on the outputs of layers {effective} (what this engine captures for this "
                     "target), or make the builder read the draft's ids"},
    fires=(example(model_file("foo", mark(model(), "layers_to_capture = [2,", "fallback-triggered")),
                   target_config=TARGET, draft_config=DRAFT_NO_IDS),
           # LMDeploy's shape: the builder writes (2, n // 2, n - 3) whatever the draft names
           example(*marked(config_tree(), "lmdeploy/pytorch/configurations/builder.py",
                           "hf_config.aux_hidden_state_layers = (2, n // 2", "fallback-triggered"),
                   protocol=PROTOCOL, target_config=_CONFIG_TARGET, draft_config=_config_draft([1, 5, 9]))),
    quiet=(example(_FOO, target_config=TARGET, draft_config=DRAFT_1_3_5),
           # a draft trained on the layers the builder picks: inputs of 2, 6, 9 = outputs of 1, 5, 8
           example(*config_tree(), protocol=PROTOCOL, target_config=_CONFIG_TARGET,
                   draft_config=_config_draft([2, 6, 9]))),
)

_NO_SHIFT = SETTER.replace("[val + 1 for val in layer_ids]", "list(layer_ids)")
# A loop that tests after the layer ran captures its output: ids stored as given are right
# (SGLang 0.5.23 beam.py, muse_spark.py); the convention is the model's, not the pack's.
_AFTER = DECODER.replace(
    "            if i in self.layers_to_capture:\n                aux_hidden_states.append(hidden_states)\n"
    "            hidden_states = self.layers[i](hidden_states)\n",
    "            hidden_states = self.layers[i](hidden_states)\n"
    "            if i in self.layers_to_capture:\n                aux_hidden_states.append(hidden_states)\n")
assert _AFTER != DECODER
# Two defs of the setter (a plain scan, no configs): the one that runs decides.
_SHADOW_DROPS = SETTER + mark(_NO_SHIFT, "layers_to_capture = list(layer_ids)", "offset-mismatch")
_SHADOW_KEEPS = _NO_SHIFT + SETTER

OFFSET_MISMATCH = Check(
    slug="offset-mismatch", severity="error", stage="effective",
    summary="the stored ids do not follow the model's capture convention",
    what="Compares the layers the draft was trained on (the outputs the pack's ids name) with the layers the "
         "model really captures for them: what the setter stores, read through the model's own loop (an entry "
         "tested before layer i runs holds its input, the output of layer i-1; one tested after it ran holds "
         "its output).",
    why="Every aux state comes from the layer before the one the draft expects; acceptance drops sharply "
        "(sglang #25454).",
    example="self.model.layers_to_capture = list(layer_ids)  # the loop captures the input of layer i",
    fix="Apply the same +1 shift to explicit ids in every setter of a loop that captures before a layer runs.",
    messages={"": "the draft was trained on the outputs of layers {requested} (layers_to_capture should be "
                  "{expected} with the +{shift} shift), but the setter stores {stored}: {captures}",
              "loop": "the draft's ids {requested} name the outputs of layers {wanted}, but the setter stores "
                      "{stored} and this model's loop ({loop}) tests them {how}, so it captures the outputs of "
                      "layers {effective} (layers_to_capture should be {expected})",
              "scan": "with draft ids such as {requested} on a {n}-layer model, the {setter} that runs stores "
                      "{stored} and this model's loop ({loop}) tests them {how}: it captures the outputs of layers "
                      "{effective}, not {wanted}"},
    hints={"": "apply the same +{shift} shift to explicit ids in every setter (input of layer i = output of "
               "layer i-1)",
           "loop": "store each id so that the loop captures the output of the layer it names: +1 where the loop "
                   "tests before the layer runs, unchanged where it tests after",
           "scan": "store each id so that the loop captures the output of the layer it names "
                   "(layers_to_capture should be {expected} here); the replaced definition may be the right one"},
    fires=(example(model_file("foo", mark(model(setter=_NO_SHIFT), "layers_to_capture = list(layer_ids)", "offset-mismatch")),
                   target_config=TARGET, draft_config=DRAFT_1_3_5),
           example(model_file("foo", mark(model(decoder=_AFTER), "layers_to_capture = [val + 1", "offset-mismatch")),
                   target_config=TARGET, draft_config=DRAFT_1_3_5),
           example(model_file("foo", model(setter=_SHADOW_DROPS)))),
    quiet=(example(_FOO, target_config=TARGET, draft_config=DRAFT_1_3_5),
           example(model_file("foo", model(setter=_NO_SHIFT, decoder=_AFTER)), target_config=TARGET,
                   draft_config=DRAFT_1_3_5),
           example(model_file("foo", model(setter=_SHADOW_KEEPS)))),
)

_GUARDED = SETTER.replace(
    "        self.capture_aux_hidden_states = True\n",
    "        if not self.pp_group.is_last_rank:\n            return\n        self.capture_aux_hidden_states = True\n")
_PP_UTILS = ("sglang/srt/distributed/utils.py", '''
def get_pp_indices(num_hidden_layers, pp_rank, pp_size):
    per = num_hidden_layers // pp_size
    start = pp_rank * per
    end = num_hidden_layers if pp_rank == pp_size - 1 else start + per
    return (start, end)
''')

PIPELINE_GUARD = Check(
    slug="pipeline-guard", severity="error", stage="effective",
    summary="with pipeline parallelism, chosen layers on earlier stages are never captured",
    what="Computes each pipeline stage's layers with the release's own `get_pp_indices` and reports ids whose "
         "layers run on an earlier stage while the setter returns early there (or nothing forwards their aux "
         "states to the last stage).",
    why="The last stage captures only its own layers: the draft receives fewer aux states than it expects.",
    example="def set_eagle3_layers_to_capture(self, layer_ids=None):\n"
            "    if not self.pp_group.is_last_rank:\n        return",
    fix="Capture on every stage and send the aux states with the pipeline proxy tensors, or choose ids on the "
        "last stage.",
    messages={"": "with pp={pp} the last stage runs layers {first}..{last}; layers_to_capture entries {lost} "
                  "(outputs of layers {lost_outputs}) lie on earlier stages and {what}, so they are never captured"},
    hints={"": "capture on every stage and send aux states with the pipeline proxy tensors, or choose ids on the "
               "last stage"},
    fires=(example(model_file("foo", model(setter=mark(_GUARDED, "            return", "pipeline-guard"))), _PP_UTILS,
                   target_config=TARGET, draft_config=DRAFT_1_3_5, pp=2),),
    quiet=(example(_FOO, _PP_UTILS, target_config=TARGET, draft_config=DRAFT_1_3_5, pp=1),),
)

_DRAFT_LAST = dict(DRAFT_1_3_5, eagle_config={"eagle_aux_hidden_state_layer_ids": [1, 3, 7]})

UNREACHABLE_LAYER = Check(
    slug="unreachable-layer", severity="error", stage="effective",
    summary="a chosen layer is never visited by the capture loop (or does not exist)",
    what="Runs the decoder loop of the model on the stored ids and reports entries it never visits (the last "
         "layer's output under a +1 shift), entries whose per-layer tag is never set, and setters that raise "
         "IndexError at start-up.",
    why="The draft receives fewer aux states than it was trained on, or start-up fails (sglang #32204).",
    example="# 8 layers, ids [1, 3, 7]: layers_to_capture = [2, 4, 8], and the loop visits 0..7",
    fix="Choose ids in -1..n-2 for an n-layer target under the +1 shift (-1 = the embedding output).",
    messages={
        "raises": "{hop} raises at start-up: {source}; a layer id of num_hidden_layers - 1 or more asks for a "
                  "layer that does not exist",
        "outside": "layers_to_capture entries {outside} are never visited by the loop over {span} (`{loop}`), so "
                   "{what} and {captured} of {stored} states are captured",
        "unmarked": "the loop over {span} (`{loop}`) visits layers {unmarked} but {how}, so the outputs of layers "
                    "{outputs} are not captured ({captured} of {stored} states)",
    },
    hints={"raises": "ids must be in 0..{max_id} for a target of {n} layers",
           "outside": "with the +1 shift, ids must be in -1..{max_id} for a target of {n} layers (-1 = the embedding "
                      "output); the last layer's output is never captured by this loop",
           "unmarked": "make the setter mark the layers the forward tests (or make the forward read the list)"},
    fires=(example(model_file("foo", mark(model(), "for i in range(len(self.layers)):", "unreachable-layer")),
                   target_config=TARGET, draft_config=_DRAFT_LAST),),
    quiet=(example(_FOO, target_config=TARGET, draft_config=DRAFT_1_3_5),),
)

_DEDUP_DECODER = DECODER  # the loop captures each index once
_DRAFT_FOUR = dict(DRAFT_1_3_5, num_aux_hidden_states=4)

COUNT_MISMATCH = Check(
    slug="count-mismatch", severity="error", stage="effective",
    summary="the draft expects another number of aux states than the loop captures",
    what="Compares the number of aux states the draft's `fc` layer takes (from the safetensors header, or the "
         "config's count) with the number the decoder loop captures, and the draft's target hidden size with "
         "the target's.",
    why="The draft's input width no longer matches: start-up fails, or the states are misread (the seed "
        "story's 3 x 7168).",
    example='{"num_aux_hidden_states": 4, "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 3, 5]}}',
    fix="Make the captured ids match the draft's training ids one to one.",
    messages={
        "hidden": "the draft was trained for a target with hidden size {draft_hidden}, but this target's hidden "
                  "size is {target_hidden}",
        "count": "the draft expects {count} aux states ({source}) but the loop captures {got}{dup}: {got} x "
                 "{hidden} = {got_width} inputs instead of {want_width}",
    },
    hints={"hidden": "use a draft trained for this target",
           "count": "make the captured ids match the draft's training ids one to one"},
    fires=(example(model_file("foo", mark(model(decoder=_DEDUP_DECODER), "for i in range(len(self.layers)):",
                                          "count-mismatch")),
                   target_config=TARGET, draft_config=_DRAFT_FOUR),),
    quiet=(example(_FOO, target_config=TARGET, draft_config=DRAFT_1_3_5),),
)

CONVENTION_MISMATCH = Check(
    slug="convention-mismatch", severity="error", stage="effective",
    summary="the draft's ids were meant in another framework's convention than this tree reads them in",
    what="With `explain --draft-framework NAME` (the framework whose convention trained the draft): compares "
         "the outputs the draft was trained on (what its ids name in that framework's pack, `id_shift`) with the "
         "outputs this tree's model really captures for the same ids (its setter and its own loop, evaluated). "
         "Replaces offset-mismatch's reading of the ids when the two conventions differ.",
    why="SGLang's id i names the output of layer i, vLLM's and LMDeploy's the input of layer i: a draft trained "
        "on one and served on the other gets every aux state from the neighbouring layer, and nothing errors "
        "(vllm #43671: a MiniMax-M2 draft trained on SGLang's convention, position-0 acceptance about 10%).",
    example="tracer explain vllm-0.33.0 --target-config minimax-m2 --draft-config draft --draft-framework sglang",
    fix="Rewrite the draft's ids into this framework's convention (SGLang -> vLLM: add 1 to each id), or "
        "serve the draft on the framework it was trained for.",
    messages={"": "the draft's ids {ids} were meant in {origin}'s convention (id i names {origin_meaning}: the "
                  "outputs of layers {trained}), but {here} reads id i as {here_meaning}, so this model captures "
                  "the outputs of layers {effective}: {how_far}"},
    hints={"": "{use} in the draft's config.json, or serve it on {origin}"},
    fires=(example(model_file("foo", mark(model(), "layers_to_capture = [val + 1", "convention-mismatch")),
                   target_config=TARGET, draft_config=DRAFT_1_3_5, draft_framework="vllm"),),
    quiet=(example(_FOO, target_config=TARGET, draft_config=DRAFT_1_3_5, draft_framework="sglang"),
           example(_FOO, target_config=TARGET, draft_config=DRAFT_1_3_5)),
)

CHECKS = (FALLBACK_TRIGGERED, OFFSET_MISMATCH, PIPELINE_GUARD, UNREACHABLE_LAYER, COUNT_MISMATCH,
          CONVENTION_MISMATCH)
