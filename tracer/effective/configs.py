"""Readers for the configs that decide which layers EAGLE-3 captures.

- the target model's Hugging Face ``config.json`` (a folder or the file), with
  the nested text config of multimodal wrappers (``text_config``,
  ``language_config``, ``llm_config``);
- the EAGLE-3 draft's ``config.json`` in the conventions in use, reporting
  under which key the layer ids were found;
- the draft's ``fc.weight`` shape from a ``*.safetensors`` header alone (the
  8-byte little-endian length and the JSON header; no tensor is loaded).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tracer.safeio.read import Unreadable, is_within, load_json, read_bytes

__all__ = [
    "ConfigError",
    "DraftConfig",
    "FcWeight",
    "TargetConfig",
    "find_fc_weight",
    "load_draft_config",
    "load_target_config",
    "read_config_json",
    "read_safetensors_header",
]

# A safetensors header larger than this is not a header (the format caps it at 100 MB).
_MAX_HEADER = 100 * 1024 * 1024
_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1, "BOOL": 1,
                "F8_E4M3": 1, "F8_E5M2": 1}


class ConfigError(Exception):
    """A config file is missing or cannot be read; the message says which and why."""


def _config_file(path: Path | str, what: str) -> Path:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{what}: {path} does not exist")
    if path.is_dir():
        candidate = path / "config.json"
        if not candidate.is_file():
            raise ConfigError(f"{what}: {path} is a folder without config.json")
        return candidate
    return path


MAX_LAYERS = 10_000  # a layer count past this is an input error, not a loop of 10**12 steps
MAX_CONFIG_BYTES = 16 * 1024 * 1024  # real config.json files are a few KB; index files up to ~1 MB


def _read_json(path: Path, what: str, root: Path | None = None) -> dict:
    """By the reading rule: a regular file (a FIFO never blocks), bounded, inside ``root``."""
    try:
        text = read_bytes(path, MAX_CONFIG_BYTES, root).decode("utf-8")
    except Unreadable as exc:
        raise ConfigError(f"{what}: cannot read {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what}: {path} is not UTF-8: {exc.reason}") from None
    try:
        data = load_json(text, path)
    except Unreadable as exc:
        raise ConfigError(f"{what}: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{what}: {path} holds a JSON {type(data).__name__}, not an object")
    return data


def _short_int(value: int) -> str:
    digits = len(str(value)) if value.bit_length() < 10_000 else None
    return f"{value:,}" if digits is not None and digits <= 30 else "an integer of more than 30 digits"


def _int_or_none(data: dict, key: str, path: Path, what: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{what}: {path}: `{key}` should be an integer, found {value!r}")
    return value


# ---------------------------------------------------------------- target


@dataclass(frozen=True)
class TargetConfig:
    path: Path
    top: dict  # the whole config.json: what a wrapper's self.config is
    text: dict  # the nested text config (or the top one): what the inner language model's self.config is
    text_key: str | None  # "text_config" etc., None when not nested
    architectures: tuple
    model_type: str | None
    num_hidden_layers: int | None  # of the text model
    hidden_size: int | None  # of the text model

    @property
    def is_nested(self) -> bool:
        return self.text_key is not None

    def config_for(self, inner: bool) -> dict:
        """The config a model object sees as ``self.config``: the top one for
        the wrapper, the text one for the language model inside it."""
        return self.text if inner else self.top


def read_config_json(path: Path | str, what: str) -> tuple[dict, tuple[str, ...]]:
    """(the config object, its architectures) of a config.json or its folder."""
    raw = _read_json(_config_file(path, what), what)
    architectures = raw.get("architectures") or []
    return raw, tuple(a for a in architectures if isinstance(a, str)) if isinstance(architectures, list) else ()


def load_target_config(path: Path | str, *, text_keys: Sequence[str]) -> TargetConfig:
    """The target's config; a multimodal wrapper's text config is under one of ``text_keys``
    (the protocol pack's ``config.target_text_config_keys``)."""
    what = "target config"
    file = _config_file(path, what)
    top = _read_json(file, what)
    text, text_key = top, None
    for key in text_keys:
        nested = top.get(key)
        if isinstance(nested, dict):
            text, text_key = nested, key
            break
    architectures = top.get("architectures") or []
    if not isinstance(architectures, list) or not all(isinstance(a, str) for a in architectures):
        raise ConfigError(f"{what}: {file}: `architectures` should be a list of class names, found {architectures!r}")
    where = f"{text_key}." if text_key else ""
    layers = _int_or_none(text, "num_hidden_layers", file, what)
    if layers is None and text_key is not None:
        layers = _int_or_none(top, "num_hidden_layers", file, what)
    hidden = _int_or_none(text, "hidden_size", file, what)
    if hidden is None and text_key is not None:
        hidden = _int_or_none(top, "hidden_size", file, what)
    if layers is None:
        raise ConfigError(f"{what}: {file} has no `{where}num_hidden_layers`")
    if layers <= 0:
        raise ConfigError(f"{what}: {file}: `{where}num_hidden_layers` is {layers}")
    if layers > MAX_LAYERS:  # every layer is visited by the decoder loop's evaluation
        raise ConfigError(f"{what}: {file}: `{where}num_hidden_layers` is {_short_int(layers)}, "
                          f"more than {MAX_LAYERS:,} layers (real models have at most a few hundred); not read")
    return TargetConfig(
        path=file,
        top=top,
        text=text,
        text_key=text_key,
        architectures=tuple(architectures),
        model_type=top.get("model_type"),
        num_hidden_layers=layers,
        hidden_size=hidden,
    )


# ---------------------------------------------------------------- safetensors


@dataclass(frozen=True)
class FcWeight:
    name: str  # tensor name, e.g. "fc.weight" or "model.fc.weight"
    shape: tuple  # (out_features, in_features)
    dtype: str
    file: Path

    @property
    def input_width(self) -> int | None:
        return self.shape[1] if len(self.shape) == 2 else None


def read_safetensors_header(path: Path | str, root: Path | None = None) -> dict:
    """The JSON header of a safetensors file (tensor name -> dtype, shape, offsets): only
    the first 8 + header bytes are read, by the reading rule (regular file, non-blocking,
    inside ``root``)."""
    path = Path(path)
    try:
        start = read_bytes(path, 8 + _MAX_HEADER, root, cut=True)
    except Unreadable as exc:
        raise ConfigError(f"safetensors: cannot read {exc}") from None
    prefix = start[:8]
    if len(prefix) != 8:
        raise ConfigError(f"safetensors: {path} is shorter than the 8-byte header length")
    (length,) = struct.unpack("<Q", prefix)
    if length == 0 or length > _MAX_HEADER:
        raise ConfigError(f"safetensors: {path} declares a header of {length} bytes; not a safetensors file")
    raw = start[8:8 + length]
    if len(raw) != length:
        raise ConfigError(f"safetensors: {path} is truncated ({len(raw)} of {length} header bytes)")
    try:
        header = load_json(raw, path)
    except Unreadable as exc:
        raise ConfigError(f"safetensors: header of {exc}") from None
    if not isinstance(header, dict):
        raise ConfigError(f"safetensors: {path} header is not a JSON object")
    return header


def _is_fc_weight(name: str) -> bool:
    return name == "fc.weight" or name.endswith(".fc.weight")


def find_fc_weight(files: Sequence[Path | str], root: Path | None = None) -> FcWeight | None:
    """The draft's ``fc.weight`` (the projection of the concatenated aux states)."""
    for file in files:
        header = read_safetensors_header(file, root)
        names = sorted((n for n in header if n != "__metadata__" and _is_fc_weight(n)), key=len)
        for name in names:
            info = header[name]
            if not isinstance(info, dict) or not isinstance(info.get("shape"), list):
                raise ConfigError(f"safetensors: {file}: entry {name!r} has no shape")
            return FcWeight(name, tuple(int(x) for x in info["shape"]), str(info.get("dtype", "?")), Path(file))
    return None


def _safetensors_beside(folder: Path) -> list:
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        data = _read_json(index, "safetensors index", folder)
        weight_map = data.get("weight_map") or {}
        if not isinstance(weight_map, dict):
            raise ConfigError(f"safetensors index: {index}: weight_map is not an object")
        wanted = [f for n, f in weight_map.items() if isinstance(n, str) and isinstance(f, str) and _is_fc_weight(n)]
        # a weight_map path may not leave the folder (`../../etc/x`, an absolute path, a link out)
        files = [folder / f for f in dict.fromkeys(wanted)
                 if not Path(f).is_absolute() and ".." not in Path(f).parts and is_within(folder / f, folder)
                 and (folder / f).is_file()]
        if files:
            return files
    return sorted(folder.glob("*.safetensors"))


# ---------------------------------------------------------------- draft


@dataclass(frozen=True)
class DraftConfig:
    path: Path
    raw: dict
    layer_ids: tuple | None  # the ids the draft was trained on, None when it names none
    ids_key: str | None  # where they were found, e.g. "eagle_config.eagle_aux_hidden_state_layer_ids"
    num_aux_hidden_states: int | None
    target_hidden_size: int | None
    hidden_size: int | None
    use_aux_hidden_state: bool | None  # eagle_config.use_aux_hidden_state when present
    fc: FcWeight | None = None
    architectures: tuple = ()
    notes: tuple = field(default_factory=tuple)

    @property
    def fc_input_width(self) -> int | None:
        return self.fc.input_width if self.fc else None

    def expected_aux_count(self, target_hidden: int | None) -> tuple:
        """(count, source): how many aux states the draft's fc expects, best evidence first."""
        hidden = self.target_hidden_size or target_hidden
        width = self.fc_input_width
        if width is not None and hidden and self.fc is not None:
            if width % hidden == 0:
                return width // hidden, f"{self.fc.name} input width {width} = {width // hidden} x {hidden}"
            return None, f"{self.fc.name} input width {width} is not a multiple of the hidden size {hidden}"
        if self.num_aux_hidden_states is not None:
            return self.num_aux_hidden_states, "num_aux_hidden_states"
        if self.layer_ids is not None:
            return len(self.layer_ids), self.ids_key
        return None, "no fc weight, num_aux_hidden_states or layer ids"


def _get_dotted(data: dict, dotted: str) -> tuple:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return False, None
        node = node[part]
    return True, node


def load_draft_config(
    path: Path | str,
    *,
    ids_keys: Sequence[str],
    count_keys: Sequence[str] = (),
    weights: Sequence[Path | str] | None = None,
) -> DraftConfig:
    """Read a draft config (folder or file): its layer ids under the first of ``ids_keys``
    found (the pack's ``config.draft_ids_keys``), its aux-state count under ``count_keys``.
    Safetensors files in the same folder (or ``weights``) are read for ``fc.weight``'s shape."""
    what = "draft config"
    file = _config_file(path, what)
    raw = _read_json(file, what)
    notes = []
    layer_ids, ids_key = None, None
    for key in ids_keys:
        found, value = _get_dotted(raw, key)
        if not found or value is None:
            continue
        if not isinstance(value, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in value):
            raise ConfigError(f"{what}: {file}: `{key}` should be a list of integers, found {value!r}")
        if layer_ids is None:
            layer_ids, ids_key = tuple(value), key
        elif tuple(value) != layer_ids:
            notes.append(f"`{key}` = {value} differs from `{ids_key}` = {list(layer_ids)}; using `{ids_key}`")
    eagle_config = raw.get("eagle_config")
    if eagle_config is not None and not isinstance(eagle_config, dict):
        notes.append(f"`eagle_config` is a {type(eagle_config).__name__}, not an object")
        eagle_config = None
    use_aux = eagle_config.get("use_aux_hidden_state") if isinstance(eagle_config, dict) else None
    if use_aux is not None and not isinstance(use_aux, bool):
        raise ConfigError(f"{what}: {file}: `eagle_config.use_aux_hidden_state` should be true or false")
    fc = None
    if weights is not None:
        fc = find_fc_weight(weights)
    else:
        files = _safetensors_beside(file.parent)
        if files:
            fc = find_fc_weight(files, file.parent)
            if fc is None:
                notes.append(f"no fc.weight in {', '.join(f.name for f in files)}")
    architectures = raw.get("architectures") or []
    return DraftConfig(
        path=file,
        raw=raw,
        layer_ids=layer_ids,
        ids_key=ids_key,
        num_aux_hidden_states=next((n for n in (_int_or_none(raw, k, file, what) for k in count_keys) if n is not None),
                                   None),
        target_hidden_size=_int_or_none(raw, "target_hidden_size", file, what),
        hidden_size=_int_or_none(raw, "hidden_size", file, what),
        use_aux_hidden_state=use_aux,
        fc=fc,
        architectures=tuple(a for a in architectures if isinstance(a, str)),
        notes=tuple(notes),
    )
