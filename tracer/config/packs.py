"""Protocol packs: the TOML files in rules/ (and ``--rules`` files), read strictly.

Every key a pack may hold is listed in ``KEYS`` with its type and the Protocol
field it fills, and is read by some stage; an unknown or mistyped key is an
error naming the file and the key (a typo must not silently switch a check off).
"""

from __future__ import annotations

import difflib
import sys
from dataclasses import fields
from importlib import resources
from pathlib import Path
from typing import Any

from tracer.model.protocol import Protocol
from tracer.safeio.read import Unreadable, read_bytes

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

MAX_PACK_BYTES = 1024 * 1024


class ProtocolError(Exception):
    pass


# key in the TOML (table.key) -> (Protocol field, type, required)
KEYS: dict[str, tuple[str, type, bool]] = {
    "name": ("name", str, True),
    "framework": ("framework", str, True),
    "description": ("description", str, False),
    "rank": ("rank", int, False),
    "setter": ("setter", str, True),
    "state_attribute": ("state_attribute", str, True),
    "output_flag": ("output_flag", str, False),
    "ids_parameter": ("ids_parameter", str, False),
    "id_shift": ("id_shift", int, False),
    "state_markers": ("state_markers", list, False),
    "delegate_methods": ("delegate_methods", list, False),
    "flow.forward_methods": ("forward_methods", list, False),
    "flow.method_values": ("method_values", list, False),
    "flow.module_call": ("module_call", str, False),
    "entry.capability_bases": ("capability_bases", list, False),
    "entry.platform": ("platform", str, False),
    "detect.package": ("package", str, True),
    "detect.markers": ("markers", list, False),
    "entry.kind": ("entry_kind", str, False),
    "entry.variable": ("entry_variable", str, False),
    "entry.modules": ("entry_modules", list, False),
    "entry.draft_patterns": ("draft_patterns", list, False),
    "entry.draft_registry_variables": ("draft_registry_variables", list, False),
    "entry.exclude_patterns": ("exclude_patterns", list, False),
    "entry.registry_module": ("registry_module", str, False),
    "entry.registry_variables": ("registry_variables", list, False),
    "entry.registry_package": ("registry_package", str, False),
    "entry.registry_factories": ("registry_factories", list, False),
    "entry.registry_factory_keyword": ("registry_factory_keyword", str, False),
    "entry.registry_factory_class_keywords": ("registry_factory_class_keywords", list, False),
    "runner.modules": ("runner_modules", list, False),
    "runner.roots": ("runner_roots", list, False),
    "runner.graph_capture_calls": ("graph_capture_calls", list, False),
    "runner.graph_capture_classes": ("graph_capture_classes", list, False),
    "runner.fallback_calls": ("runner_fallback_calls", list, False),
    "defaults.methods": ("default_methods", list, False),
    "fallback.description": ("fallback_description", str, False),
    "fallback.logging_calls": ("logging_calls", list, False),
    "config.draft_ids_keys": ("draft_ids_keys", list, False),
    "config.runner_ids_keys": ("runner_ids_keys", list, False),
    "config.draft_count_keys": ("draft_count_keys", list, False),
    "config.draft_architectures": ("draft_architectures", list, False),
    "config.target_text_config_keys": ("target_text_config_keys", list, False),
    "config.default_aux_count": ("default_aux_count", int, False),
    "source.config_attribute": ("config_attribute", str, False),
    "source.builder_bases": ("builder_bases", list, False),
    "source.builder_condition": ("builder_condition", str, False),
    "source.builder_methods": ("builder_methods", list, False),
    "source.builder_arguments": ("builder_arguments", list, False),
    "source.model_types": ("model_types", list, False),
    "argument.parameter": ("argument_parameter", str, False),
    "argument.hook": ("argument_hook", str, False),
    "argument.default_classes": ("default_classes", list, False),
    "argument.default_method": ("default_method", str, False),
    "argument.default_field": ("default_field", str, False),
    "argument.layers_field": ("layers_field", str, False),
    "entry.decorators": ("entry_decorators", list, False),
    "output.key": ("output_key", str, False),
    "output.methods": ("output_methods", list, False),
    "effective.pp_indices_function": ("pp_indices_function", str, False),
    "effective.pp_group_expressions": ("pp_group_expressions", list, False),
    "effective.assume_false": ("assume_false", list, False),
}
ENTRY_KINDS = ("module-variable", "registry-dict", "registry-update", "decorator")
_TABLES = {key.split(".")[0] for key in KEYS if "." in key}
_TYPE_WORDS = {str: "a string", int: "an integer", list: "a list of strings"}


def _flatten(data: dict[str, Any], source: str) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        if key in _TABLES:
            if not isinstance(value, dict):
                raise ProtocolError(f"{source}: [{key}] must be a table")
            for inner, inner_value in value.items():
                flat[f"{key}.{inner}"] = inner_value
        else:
            flat[key] = value
    return flat


def parse_protocol(text: str, source: str) -> Protocol:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ProtocolError(f"{source}: invalid TOML: {exc}") from None
    except RecursionError:
        raise ProtocolError(f"{source}: invalid TOML: nests too deeply") from None
    flat = _flatten(data, source)
    unknown = sorted(set(flat) - set(KEYS))
    if unknown:
        close = difflib.get_close_matches(unknown[0], list(KEYS), n=1, cutoff=0.6)
        hint = f"did you mean '{close[0]}'?" if close else "see KEYS in tracer/config/packs.py for the keys a pack may hold"
        raise ProtocolError(f"{source}: unknown key '{unknown[0]}' ({hint})")
    values: dict[str, Any] = {"source": source}
    for key, (name, kind, required) in KEYS.items():
        if key not in flat:
            if required:
                raise ProtocolError(f"{source}: missing required key '{key}'")
            continue
        value = flat[key]
        ok = (isinstance(value, list) and all(isinstance(v, str) for v in value)) if kind is list else (
            isinstance(value, kind) and not isinstance(value, bool))
        if not ok:
            raise ProtocolError(f"{source}: '{key}' must be {_TYPE_WORDS[kind]}, not {value!r}")
        values[name] = tuple(value) if kind is list else value
    if values.get("entry_kind", "module-variable") not in ENTRY_KINDS:
        raise ProtocolError(f"{source}: 'entry.kind' must be one of {', '.join(ENTRY_KINDS)}")
    if values.get("entry_kind") in ("registry-dict", "registry-update") and not values.get("registry_module"):
        raise ProtocolError(f"{source}: 'entry.kind' {values['entry_kind']} needs 'entry.registry_module'")
    if values.get("entry_kind") == "decorator" and not values.get("entry_decorators"):
        raise ProtocolError(f"{source}: 'entry.kind' decorator needs 'entry.decorators'")
    if values.get("argument_parameter") and not values.get("argument_hook"):
        raise ProtocolError(f"{source}: 'argument.parameter' needs 'argument.hook'")
    assert set(values) <= {f.name for f in fields(Protocol)}
    return Protocol(**values)


def _builtin_files() -> list[tuple[str, str]]:
    """(name, text) of the packs shipped with tracer: ``tracer._rules`` when installed,
    the repository's ``rules/`` when run from a checkout."""
    checkout = Path(__file__).resolve().parents[2] / "rules"
    if checkout.is_dir() and (checkout.parent / "tracer").is_dir():
        return [(p.name, p.read_text(encoding="utf-8")) for p in sorted(checkout.glob("*.toml"))]
    folder = resources.files("tracer._rules")
    return [(e.name, e.read_text(encoding="utf-8")) for e in sorted(folder.iterdir(), key=lambda e: e.name)
            if e.name.endswith(".toml")]


def builtin_protocols() -> list[Protocol]:
    return [parse_protocol(text, f"rules/{name}") for name, text in _builtin_files()]


def _read_pack(path: str) -> str:
    """By the reading rule: a regular file (a FIFO never blocks, /dev/zero is refused), bounded."""
    try:
        data = read_bytes(path, MAX_PACK_BYTES)
    except Unreadable as exc:
        raise ProtocolError(f"cannot read rules file {exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError(f"{path}: rules file is not UTF-8") from None


def load_protocols(names: list[str] | None = None, extra_files: list[str] | None = None,
                   replace_builtin: bool = False) -> list[Protocol]:
    """Built-in packs plus ``--rules`` files, filtered by ``--protocol`` names. An
    extra pack with a built-in pack's name is an error unless ``replace_builtin``."""
    packs = builtin_protocols()
    builtin = {p.name for p in packs}
    for path in extra_files or []:
        pack = parse_protocol(_read_pack(path), path)
        if pack.name in builtin and not replace_builtin:
            raise ProtocolError(f"{path}: pack '{pack.name}' has the name of a built-in pack "
                                "(rename it, or pass --replace-builtin to use it instead)")
        packs = [p for p in packs if p.name != pack.name] + [pack]
    if names:
        known = {p.name: p for p in packs}
        unknown = [n for n in names if n not in known]
        if unknown:
            raise ProtocolError(f"unknown protocol {', '.join(unknown)} (known: {', '.join(sorted(known))})")
        packs = [known[n] for n in names]
    return packs
