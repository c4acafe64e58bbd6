"""A capture protocol as data: what a pack in rules/*.toml says (tracer.config.packs reads it).

A pack names where a protocol starts (the setter the runner calls, how entry
classes are found, the runner's start-up) and gives hints (the usual state
attribute, the usual output flag, where draft configs keep the ids). No stage
holds a framework's name: everything framework-specific is here.
"""

from __future__ import annotations

import fnmatch
import functools
from dataclasses import dataclass


@dataclass(frozen=True)
class Protocol:
    name: str
    framework: str
    setter: str
    state_attribute: str
    package: str
    source: str  # file the pack came from
    description: str = ""
    rank: int = 100  # where its verdicts come in the text output: lower first, then by name
    output_flag: str = ""
    ids_parameter: str = "layer_ids"
    # Default offset convention: explicit ids are shifted by this much before being stored
    # (input of layer i == output of layer i-1). A model's own loop and setter decide first.
    id_shift: int = 0
    markers: tuple[str, ...] = ()
    state_markers: tuple[str, ...] = ()  # per-layer attributes a forward may read instead of the list
    delegate_methods: tuple[str, ...] = ()  # carriers: methods that must be handed the ids (ids-dropped)
    # value flow
    forward_methods: tuple[str, ...] = ("forward",)  # where a model's run starts (reads count from there)
    # the method a call of a model instance runs (torch's nn.Module.__call__ runs forward): scan and
    # graph --all bind `self.model(...)` alike only through this key; "" leaves instance calls to __call__
    module_call: str = ""
    method_values: tuple[str, ...] = ()  # "getter=self.attr": what a getter returns when its body can't be read
    capability_bases: tuple[str, ...] = ()  # an entry class is capable only with one of these in its MRO
    platform: str = ""  # the platform whose binding of a conditionally bound name is the default ("cuda")
    # entry classes
    entry_kind: str = "module-variable"  # or "registry-dict"
    entry_variable: str = ""  # the registry variable of "module-variable" entry modules
    entry_modules: tuple[str, ...] = ()
    draft_patterns: tuple[str, ...] = ()  # entry classes that are draft heads (fnmatch on class or module name)
    # registry variables whose classes are draft heads (unless a target variable registers them too)
    draft_registry_variables: tuple[str, ...] = ()
    exclude_patterns: tuple[str, ...] = ()  # registered classes that are never targets (fnmatch on class name)
    registry_module: str = ""
    registry_variables: tuple[str, ...] = ()
    registry_package: str = ""  # package the registry's module names are relative to
    registry_factories: tuple[str, ...] = ()  # functions that build a registry class by architecture name
    registry_factory_keyword: str = "architectures"
    registry_factory_class_keywords: tuple[str, ...] = ()  # `model_class=Cls` passes the class itself
    # runner
    runner_modules: tuple[str, ...] = ()
    runner_roots: tuple[str, ...] = ()
    graph_capture_calls: tuple[str, ...] = ()
    graph_capture_classes: tuple[str, ...] = ()
    default_methods: tuple[str, ...] = ()  # methods giving a model's default layers
    # functions the runner calls to guess layer ids when the draft names none (silent-fallback)
    runner_fallback_calls: tuple[str, ...] = ()
    # fallback
    fallback_description: str = ""
    logging_calls: tuple[str, ...] = ()  # callee names (or their first part) that count as logging
    # configs (effective layers)
    draft_ids_keys: tuple[str, ...] = ()  # where draft checkpoints keep the ids, in order of preference
    runner_ids_keys: tuple[str, ...] = ()  # the keys the runner really reads the ids from
    draft_count_keys: tuple[str, ...] = ()
    draft_architectures: tuple[str, ...] = ()  # fnmatch patterns of the draft models this protocol feeds
    target_text_config_keys: tuple[str, ...] = ()
    default_aux_count: int = 0  # aux states the runner sizes the draft for when it names no ids (0: unknown)
    # ids carried on the model's config object (no setter): builders write config.<attr>, an __init__ reads it
    config_attribute: str = ""
    builder_bases: tuple[str, ...] = ()  # classes whose subclasses are config builders
    builder_condition: str = "condition"  # the builder method that says which configs it builds
    builder_methods: tuple[str, ...] = ("build",)  # builder methods that may write the attribute
    builder_arguments: tuple[str, ...] = ()  # "name=literal": what the engine passes a builder (explain)
    model_types: tuple[str, ...] = ()  # "model_type=Architecture": what checkpoints of a model type name
    # the output path: the key the captured states travel under, and the methods that copy outputs
    output_key: str = ""
    output_methods: tuple[str, ...] = ()  # e.g. the CUDA-graph replay's output copy
    # ids carried by a forward argument (no setter, no state on the model): the runner passes a metadata
    # object as ``<argument_parameter>=`` to the entry's forward; it must travel down the call chain to a
    # call of ``<argument_parameter>.<argument_hook>(...)`` in a decoder layer
    argument_parameter: str = ""
    argument_hook: str = ""
    entry_decorators: tuple[str, ...] = ()  # entry kind "decorator": `@name("Arch")` registers a class
    # the metadata classes whose dataclass field holds the ids, and the method that defaults it when the
    # config names none (silent-fallback when it logs nothing)
    default_classes: tuple[str, ...] = ()
    default_method: str = ""
    default_field: str = ""
    layers_field: str = "num_layers"  # explain: the metadata field that holds the target's layer count
    # effective layers: how the model code reaches pipeline state, and what the capture loop may assume
    pp_indices_function: str = ""  # dotted name of the function giving a stage's layer range
    pp_group_expressions: tuple[str, ...] = ()
    assume_false: tuple[str, ...] = ()  # expressions taken as False when evaluating the capture loop

    def is_entry_module(self, module: str) -> bool:
        return any(fnmatch.fnmatchcase(module, pat) for pat in self.entry_modules)

    def is_draft(self, module: str, class_name: str) -> bool:
        last = module.rsplit(".", 1)[-1]
        return any(fnmatch.fnmatchcase(class_name, p) or fnmatch.fnmatchcase(last, p) for p in self.draft_patterns)

    def is_excluded(self, class_name: str) -> bool:
        return any(fnmatch.fnmatchcase(class_name, p) for p in self.exclude_patterns)

    def is_runner_module(self, module: str) -> bool:
        return any(fnmatch.fnmatchcase(module, pat) for pat in self.runner_modules)

    def feeds_draft(self, architectures: tuple[str, ...]) -> bool:
        return any(fnmatch.fnmatchcase(a, p) for a in architectures for p in self.draft_architectures)

    def is_logging_call(self, callee: str) -> bool:
        """``logger.warning`` and ``logging.info`` count when "logger"/"logging" is listed."""
        head = callee.split(".")[0]
        last = callee.rpartition(".")[2]
        return any(name in (callee, head, last) for name in self.logging_calls)

    @functools.cached_property
    def scope(self) -> str:
        """The package all entry and runner modules share ("sglang.srt"); a scan
        reads only modules inside it. "" means everything."""
        prefixes = [p.split("*")[0].rstrip(".").split(".") for p in self.entry_modules + self.runner_modules]
        if self.registry_module:
            prefixes.append(self.registry_module.split("."))
        if not prefixes:
            return ""
        common = []
        for parts in zip(*prefixes):
            if len(set(parts)) != 1 or not parts[0]:
                break
            common.append(parts[0])
        return ".".join(common)

    def in_scope(self, module: str) -> bool:
        scope = self.scope
        return not scope or module == scope or module.startswith(scope + ".")

    @property
    def tokens(self) -> tuple[str, ...]:
        """Names whose presence in a file means the file must be indexed."""
        if self.argument_parameter:  # the setter is the forward: every model file has one
            names = (self.argument_parameter, self.argument_hook, *self.entry_decorators, *self.default_classes)
            return tuple(t for t in names if t)
        if self.config_attribute:  # the setter is the constructor: every file has one
            names = (self.config_attribute, self.state_attribute, *self.builder_bases)
            return tuple(t for t in names if t)
        names = (self.setter, self.state_attribute, self.output_flag, *self.delegate_methods, *self.default_methods)
        return tuple(t for t in names if t)
