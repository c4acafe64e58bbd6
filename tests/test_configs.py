"""Config readers: target config.json, EAGLE-3 draft conventions, safetensors headers."""

import json
import struct
from pathlib import Path

import pytest

from tracer.config.packs import load_protocols
from tracer.effective import configs
from tracer.effective.configs import ConfigError, find_fc_weight, read_safetensors_header

EAGLE3 = load_protocols(["sglang-eagle3"])[0]


def load_target_config(path):
    """The reader with the keys the SGLang EAGLE-3 pack names (the reader itself knows none)."""
    return configs.load_target_config(path, text_keys=EAGLE3.target_text_config_keys)


def load_draft_config(path, weights=None):
    return configs.load_draft_config(path, ids_keys=EAGLE3.draft_ids_keys, count_keys=EAGLE3.draft_count_keys,
                                     weights=weights)

CONFIGS = Path(__file__).parent / "data" / "configs"


def write_safetensors(path: Path, tensors: dict, metadata: dict | None = None) -> Path:
    """A safetensors file: 8-byte little-endian header length, JSON header, zeroed data."""
    header = {}
    offset = 0
    for name, (dtype, shape) in tensors.items():
        size = 2
        for dim in shape:
            size *= dim
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    if metadata is not None:
        header["__metadata__"] = metadata
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    path.write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))
    return path


# ------------------------------------------------------------------ target


@pytest.mark.parametrize(
    "folder, arch, layers, hidden",
    [
        ("llama-3.1-8b", "LlamaForCausalLM", 32, 4096),
        ("qwen2.5-7b", "Qwen2ForCausalLM", 28, 3584),
        ("deepseek-v3", "DeepseekV3ForCausalLM", 61, 7168),
    ],
)
def test_flat_target_configs(folder, arch, layers, hidden):
    config = load_target_config(CONFIGS / folder)
    assert config.architectures == (arch,)
    assert (config.num_hidden_layers, config.hidden_size) == (layers, hidden)
    assert not config.is_nested
    assert config.config_for(inner=True) is config.config_for(inner=False)


def test_nested_text_config_for_multimodal_wrapper():
    config = load_target_config(CONFIGS / "kimi-k2.5" / "config.json")
    assert config.architectures == ("KimiK25ForConditionalGeneration",)
    assert config.text_key == "text_config"
    assert (config.num_hidden_layers, config.hidden_size) == (61, 7168)
    # The wrapper sees the top config; the language model inside sees text_config.
    assert "text_config" in config.config_for(inner=False)
    assert config.config_for(inner=True)["model_type"] == "kimi_k2"
    assert "num_hidden_layers" not in config.config_for(inner=False)


@pytest.mark.parametrize("key", ["language_config", "llm_config"])
def test_other_nested_text_keys(tmp_path, key):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["X"], key: {"num_hidden_layers": 24, "hidden_size": 2048}}))
    config = load_target_config(tmp_path)
    assert config.text_key == key
    assert config.num_hidden_layers == 24


def test_target_missing_folder(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_target_config(tmp_path / "nope")


def test_target_folder_without_config(tmp_path):
    with pytest.raises(ConfigError, match="without config.json"):
        load_target_config(tmp_path)


def test_target_invalid_json():
    with pytest.raises(ConfigError, match="not valid JSON"):
        load_target_config(CONFIGS / "broken")


def test_target_not_an_object(tmp_path):
    (tmp_path / "config.json").write_text("[1, 2]")
    with pytest.raises(ConfigError, match="not an object"):
        load_target_config(tmp_path)


def test_target_without_layer_count(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"architectures": ["X"], "hidden_size": 8}))
    with pytest.raises(ConfigError, match="num_hidden_layers"):
        load_target_config(tmp_path)


def test_target_layer_count_must_be_an_integer(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"num_hidden_layers": "32"}))
    with pytest.raises(ConfigError, match="should be an integer"):
        load_target_config(tmp_path)


# ------------------------------------------------------------------ draft


def test_draft_ids_under_eagle_config():
    draft = load_draft_config(CONFIGS / "draft-eagle-config")
    assert draft.layer_ids == (2, 30, 58)
    assert draft.ids_key == "eagle_config.eagle_aux_hidden_state_layer_ids"
    assert draft.target_hidden_size == 7168
    assert draft.use_aux_hidden_state is True
    assert draft.fc is None
    assert draft.expected_aux_count(7168) == (3, "eagle_config.eagle_aux_hidden_state_layer_ids")


def test_draft_ids_at_top_level():
    draft = load_draft_config(CONFIGS / "draft-top-level" / "config.json")
    assert draft.layer_ids == (1, 15, 28)
    assert draft.ids_key == "eagle_aux_hidden_state_layer_ids"


def test_draft_without_ids():
    draft = load_draft_config(CONFIGS / "draft-no-ids")
    assert draft.layer_ids is None and draft.ids_key is None
    assert draft.expected_aux_count(4096) == (None, "no fc weight, num_aux_hidden_states or layer ids")


def test_draft_num_aux_hidden_states():
    draft = load_draft_config(CONFIGS / "draft-num-aux")
    assert draft.layer_ids is None
    assert draft.num_aux_hidden_states == 3
    assert draft.target_hidden_size == 7168
    assert draft.expected_aux_count(7168) == (3, "num_aux_hidden_states")


def test_draft_both_keys_disagree_prefers_eagle_config(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({
        "eagle_aux_hidden_state_layer_ids": [1, 2, 3],
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [4, 5, 6]},
    }))
    draft = load_draft_config(tmp_path)
    assert draft.layer_ids == (4, 5, 6)
    assert draft.ids_key == "eagle_config.eagle_aux_hidden_state_layer_ids"
    assert "differs" in draft.notes[0]


def test_draft_ids_must_be_integers(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"eagle_config": {"eagle_aux_hidden_state_layer_ids": "2,30,58"}}))
    with pytest.raises(ConfigError, match="list of integers"):
        load_draft_config(tmp_path)


def test_draft_missing(tmp_path):
    with pytest.raises(ConfigError, match="draft config: .* does not exist"):
        load_draft_config(tmp_path / "missing.json")


# ------------------------------------------------------------------ safetensors


def test_fc_weight_width_from_header_beside_config(tmp_path):
    (tmp_path / "config.json").write_text((CONFIGS / "draft-eagle-config" / "config.json").read_text())
    write_safetensors(tmp_path / "model.safetensors", {
        "midlayer.self_attn.q_proj.weight": ("BF16", (8, 16)),
        "fc.weight": ("BF16", (7168, 3 * 7168)),
    }, metadata={"format": "pt"})
    draft = load_draft_config(tmp_path)
    assert draft.fc is not None
    assert draft.fc.name == "fc.weight"
    assert draft.fc.shape == (7168, 21504)
    assert draft.fc_input_width == 21504
    assert draft.expected_aux_count(7168) == (3, "fc.weight input width 21504 = 3 x 7168")


def test_fc_weight_under_a_prefix_and_four_states(tmp_path):
    path = write_safetensors(tmp_path / "draft.safetensors", {"model.fc.weight": ("F16", (64, 256))})
    fc = find_fc_weight([path])
    assert fc.name == "model.fc.weight" and fc.input_width == 256


def test_fc_width_not_a_multiple(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({"eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 2, 3]}}))
    write_safetensors(tmp_path / "model.safetensors", {"fc.weight": ("BF16", (64, 100))})
    draft = load_draft_config(tmp_path)
    count, why = draft.expected_aux_count(64)
    assert count is None and "not a multiple" in why


def test_safetensors_index_points_at_the_shard(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({}))
    write_safetensors(tmp_path / "model-00001-of-00002.safetensors", {"embed_tokens.weight": ("BF16", (4, 4))})
    write_safetensors(tmp_path / "model-00002-of-00002.safetensors", {"fc.weight": ("BF16", (32, 96))})
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps({
        "metadata": {}, "weight_map": {"embed_tokens.weight": "model-00001-of-00002.safetensors", "fc.weight": "model-00002-of-00002.safetensors"},
    }))
    draft = load_draft_config(tmp_path)
    assert draft.fc.file.name == "model-00002-of-00002.safetensors"
    assert draft.fc_input_width == 96


def test_header_is_read_without_the_data(tmp_path):
    # A header that promises 1 GiB of data the file does not hold: only the header is read.
    raw = json.dumps({"fc.weight": {"dtype": "BF16", "shape": [16384, 49152], "data_offsets": [0, 1 << 30]}}).encode()
    path = tmp_path / "big.safetensors"
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)
    assert read_safetensors_header(path)["fc.weight"]["shape"] == [16384, 49152]


@pytest.mark.parametrize(
    "content, message",
    [
        (b"abc", "shorter than the 8-byte"),
        (struct.pack("<Q", 0), "not a safetensors file"),
        (struct.pack("<Q", 1 << 40) + b"{}", "not a safetensors file"),
        (struct.pack("<Q", 100) + b"{}", "truncated"),
        (struct.pack("<Q", 5) + b"{oops", "not valid JSON"),
        (struct.pack("<Q", 2) + b"[]", "not a JSON object"),
    ],
)
def test_bad_safetensors_headers(tmp_path, content, message):
    path = tmp_path / "bad.safetensors"
    path.write_bytes(content)
    with pytest.raises(ConfigError, match=message):
        read_safetensors_header(path)
