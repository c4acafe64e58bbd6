"""Checks on the runner's start-up: where the setter is called, with what, and when."""

from __future__ import annotations

from tracer.checks import Check, example
from tracer.checks.trees import SETTER, mark, model, model_file, runner

_GRAPHS = '''
    def init_device_graphs(self):
        self.graph_runner = CudaGraphRunner(self)


class CudaGraphRunner:
    def __init__(self, model_runner):
        self.model_runner = model_runner
        self.capture()

    def capture(self):
        pass
'''

_IN_ORDER = '''
    def initialize(self):
        ids = self.server_args.eagle_aux_hidden_state_layer_ids
        self.model.set_eagle3_layers_to_capture(ids)
        self.init_device_graphs()
''' + _GRAPHS

_TOO_LATE = mark('''
    def initialize(self):
        ids = self.server_args.eagle_aux_hidden_state_layer_ids
        self.init_device_graphs()
        self.model.set_eagle3_layers_to_capture(ids)
''', "set_eagle3_layers_to_capture(ids)", "call-order") + _GRAPHS

CALL_ORDER = Check(
    slug="call-order", severity="error", stage="runner",
    summary="the runner sets the configured ids only after CUDA-graph capture",
    what="Walks the runner's start-up in source order from the roots named in the protocol pack and reports a "
         "call with ids that runs after CUDA graphs are captured.",
    why="Replayed graphs keep whatever layers an earlier call set (often the fallback), so decode captures other "
        "layers than prefill (sglang #22836).",
    example="self.init_device_graphs()\nself.model.set_eagle3_layers_to_capture(ids)  # too late for the graphs",
    fix="Call the setter with the configured ids before any CUDA-graph capture.",
    messages={"": "{caller} calls {setter} with the configured ids only after CUDA-graph capture: replayed graphs "
                  "keep the layers an earlier call set, so decode captures other layers than prefill"},
    hints={"": "Call the setter with the configured ids before capturing CUDA graphs."},
    fires=(example(model_file("foo", model()), runner(_TOO_LATE)),),
    quiet=(example(model_file("foo", model()), runner(_IN_ORDER)),),
)

_TAGGING = '''
    def set_eagle3_layers_to_capture(self, layer_ids=None):
        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            logger.warning("no layer ids given; capturing the default layers")
            layer_ids = [1, num_layers // 2 - 1, num_layers - 4]
        self.model.layers_to_capture = [val + 1 for val in layer_ids]
        for layer_id in self.model.layers_to_capture:
            setattr(self.model.layers[layer_id], "_is_layer_to_capture", True)
'''

_TWICE = '''
    def initialize(self):
        self.model.set_eagle3_layers_to_capture()
        ids = self.server_args.eagle_aux_hidden_state_layer_ids
        self.model.set_eagle3_layers_to_capture(ids)
        self.init_device_graphs()
''' + _GRAPHS

STALE_LAYER_MARKERS = Check(
    slug="stale-layer-markers", severity="error", stage="pipeline",
    summary="layer tags from an earlier setter call are never cleared",
    what='Reports a setter that tags the chosen decoder layers (`setattr(layer, "_is_layer_to_capture", True)`) '
         "without ever clearing earlier tags, in a release whose runner calls the setter more than once.",
    why="Tags set by an earlier call (often the no-id fallback) stay: the loop captures the union of both layer "
        "lists, so the draft receives more aux states than it was trained on (seen on an H200 with sglang 0.5.6 "
        "Qwen3-MoE: ids [0,2,4] captured the outputs of [0,1,2,4]).",
    example="def set_eagle3_layers_to_capture(self, layers_to_capture):\n"
            "    self.layers_to_capture = layers_to_capture\n"
            "    for layer_id in self.layers_to_capture:\n"
            "        setattr(self.layers[layer_id], \"_is_layer_to_capture\", True)",
    fix="Clear every layer's tag first (`for layer in self.layers: layer._is_layer_to_capture = False`).",
    messages={"": "{setter_name} tags the chosen layers but never clears earlier tags, and the runner calls "
                  "{setter} {count} times ({calls}): the loop captures the union of the layer lists"},
    hints={"": "Clear every layer's tag before setting the new ones."},
    fires=(example(model_file("foo", model(setter=mark(_TAGGING, '"_is_layer_to_capture", True)',
                                                       "stale-layer-markers"))), runner(_TWICE)),),
    quiet=(example(model_file("foo", model(setter=_TAGGING)), runner(_IN_ORDER)),
           example(model_file("foo", model(setter=SETTER)), runner(_TWICE))),
)

CHECKS = (CALL_ORDER, STALE_LAYER_MARKERS)
