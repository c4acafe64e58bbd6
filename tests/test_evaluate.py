"""The abstract interpreter on setter bodies and decoder loops copied verbatim
from real SGLang releases (each literal names its release and file:line), plus
small cases for each construct it models."""

import pytest

from tracer.interp.evaluate import (
    ABSENT,
    Obj,
    Unknown,
    captured_indices,
    evaluate_function,
    is_unknown,
)

# ----------------------------------------------------------------------------
# Verbatim sources. Each is (line of the `def` in the release file, source).
# ----------------------------------------------------------------------------

# sglang 0.5.23, sglang/srt/models/qwen2.py:781 (Qwen2ForCausalLM.set_eagle3_layers_to_capture)
QWEN2_0523 = (781, r"""
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        if not self.pp_group.is_last_rank:
            return

        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [
                2,
                num_layers // 2,
                num_layers - 3,
            ]  # Specific layers for EAGLE3 support
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]
""")

# sglang 0.5.23, sglang/srt/models/deepseek_v2.py:3458 (DeepseekV2ForCausalLM.set_eagle3_layers_to_capture)
DEEPSEEK_V2_0523 = (3458, r"""
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        if not self.pp_group.is_last_rank:
            return

        if layer_ids is None:
            self.capture_aux_hidden_states = True
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.capture_aux_hidden_states = True
            # TODO (Qiaolin-Yu): check if other draft models need similar layer id
            # adjustment
            if layer_ids and layer_ids[0] == 1:
                self.model.layers_to_capture = [val + 1 for val in layer_ids]
            else:
                self.model.layers_to_capture = list(layer_ids)
""")

# sglang 0.5.6, sglang/srt/models/deepseek_v2.py:4089 (DeepseekV2ForCausalLM.set_eagle3_layers_to_capture)
DEEPSEEK_V2_056 = (4089, r"""
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        if not self.pp_group.is_last_rank:
            return

        if layer_ids is None:
            self.capture_aux_hidden_states = True
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.capture_aux_hidden_states = True
            # we plus 1 here because in sglang, for the ith layer, it takes the output
            # of the (i-1)th layer as aux hidden state
            self.model.layers_to_capture = [val + 1 for val in layer_ids]
""")

# sglang 0.5.23, sglang/srt/models/gpt_oss.py:1337 (GptOssForCausalLM.set_eagle3_layers_to_capture)
GPT_OSS_0523 = (1337, r"""
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        if not self.pp_group.is_last_rank:
            return

        num_layers = self.config.num_hidden_layers
        if layer_ids is None:
            self.capture_aux_hidden_states = True
            self.model.layers_to_capture = [2, num_layers // 2, num_layers - 3]
        else:
            self.capture_aux_hidden_states = True
            # Preserve IDs that already include the final hidden-state
            # boundary; otherwise retain the legacy output-layer conversion.
            if layer_ids and max(layer_ids) == num_layers:
                self.model.layers_to_capture = list(layer_ids)
            else:
                self.model.layers_to_capture = [val + 1 for val in layer_ids]
""")

# sglang 0.5.23, sglang/srt/models/kimi_k25.py:928 (KimiK25ForConditionalGeneration.set_eagle3_layers_to_capture)
KIMI_K25_0523 = (928, r'''
    def set_eagle3_layers_to_capture(
        self, layer_ids: Optional[List[int]] = None
    ) -> None:
        """Set the layers to capture for EAGLE3 speculative decoding."""
        if self.language_model is None or not hasattr(
            self.language_model, "set_eagle3_layers_to_capture"
        ):
            raise AttributeError(
                "language_model does not support EAGLE3 speculative decoding."
            )

        self.language_model.set_eagle3_layers_to_capture(layer_ids)
''')

# sglang 0.5.6, sglang/srt/models/qwen3_moe.py:828 (Qwen3MoeForCausalLM.set_eagle3_layers_to_capture)
QWEN3_MOE_056 = (828, r"""
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        if not self.pp_group.is_last_rank:
            return

        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.set_eagle3_layers_to_capture(
                [
                    2,
                    num_layers // 2,
                    num_layers - 3,
                ]
            )  # Specific layers for EAGLE3 support
        else:
            self.model.set_eagle3_layers_to_capture([val + 1 for val in layer_ids])
""")

# sglang 0.5.6, sglang/srt/models/qwen2_moe.py:564 (Qwen2MoeModel.set_eagle3_layers_to_capture)
QWEN2_MOE_MODEL_056 = (564, r"""
    def set_eagle3_layers_to_capture(self, layers_to_capture: List[int]):
        self.layers_to_capture = layers_to_capture
        for layer_id in self.layers_to_capture:
            setattr(self.layers[layer_id], "_is_layer_to_capture", True)
""")

# sglang 0.4.9, sglang/srt/models/mllama4.py:229 (Llama4ForConditionalGeneration.set_eagle3_layers_to_capture)
MLLAMA4_049 = (229, r"""
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        if hasattr(self.language_model, "set_eagle3_layers_to_capture"):
            self.language_model.set_eagle3_layers_to_capture(layer_ids)
""")

# sglang 0.5.6, sglang/srt/models/qwen2_5_vl.py:722 (Qwen2_5_VLForConditionalGeneration.set_eagle3_layers_to_capture)
QWEN2_5_VL_056 = (722, r"""
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        self.capture_aux_hidden_states = True
        self.model.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [
                2,
                num_layers // 2,
                num_layers - 3,
            ]  # Specific layers for EAGLE3 support
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]
""")

# sglang 0.4.9, sglang/srt/distributed/utils.py:63 (get_pp_indices)
GET_PP_INDICES_049 = (63, r'''
def get_pp_indices(
    num_hidden_layers: int, pp_rank: int, pp_size: int
) -> Tuple[int, int]:
    """Try to evenly distribute layers across partitions.
    If the number of layers is not divisible by the number of partitions,
    the last partition will have the remaining layers.
    """
    # partition_list_str can be set to None in sglang
    partition_list_str = os.getenv("SGLANG_PP_LAYER_PARTITION", None)
    if partition_list_str is not None:
        try:
            partitions = [int(layer) for layer in partition_list_str.split(",")]
        except ValueError as err:
            raise ValueError(
                "Invalid partition string: {}".format(partition_list_str)
            ) from err
        if len(partitions) != pp_size:
            raise ValueError(f"{len(partitions)=} does not match {pp_size=}.")
        if sum(partitions) != num_hidden_layers:
            raise ValueError(f"{sum(partitions)=} does not match {num_hidden_layers=}.")
        start_layer = sum(partitions[:pp_rank])
        end_layer = start_layer + partitions[pp_rank]
    else:
        layers_per_partition = num_hidden_layers // pp_size
        start_layer = pp_rank * layers_per_partition
        end_layer = start_layer + layers_per_partition

        if pp_rank == pp_size - 1:
            end_layer = num_hidden_layers

    return (start_layer, end_layer)
''')

# sglang 0.5.23, sglang/srt/distributed/utils.py:110 (get_pp_indices)
GET_PP_INDICES_0523 = (110, r'''
def get_pp_indices(
    num_hidden_layers: int, pp_rank: int, pp_size: int
) -> Tuple[int, int]:
    """Try to evenly distribute layers across partitions.
    If the number of layers is not divisible by the number of partitions,
    the last N partitions will have one extra layer, where N = remainder.
    """
    # partition_list_str can be set to None in sglang
    partition_list_str = os.getenv("SGLANG_PP_LAYER_PARTITION", None)
    if pp_size == 1:
        # A singleton draft PP group owns every layer and must ignore the target's
        # process-global pipeline partition list.
        partition_list_str = None
    if partition_list_str is not None:
        try:
            partitions = [int(layer) for layer in partition_list_str.split(",")]
        except ValueError as err:
            raise ValueError(
                "Invalid partition string: {}".format(partition_list_str)
            ) from err
        if len(partitions) != pp_size:
            raise ValueError(f"{len(partitions)=} does not match {pp_size=}.")
        if sum(partitions) != num_hidden_layers:
            raise ValueError(f"{sum(partitions)=} does not match {num_hidden_layers=}.")
        start_layer = sum(partitions[:pp_rank])
        end_layer = start_layer + partitions[pp_rank]
    else:
        base_layers = num_hidden_layers // pp_size
        remainder = num_hidden_layers % pp_size
        # Distribute the extra layers to the last 'remainder' partitions
        if pp_rank >= pp_size - remainder:
            partitions_without_extra_layer = pp_size - remainder
            # This partition gets one extra layer
            start_layer = pp_rank * (base_layers + 1) - partitions_without_extra_layer
            end_layer = start_layer + (base_layers + 1)
        else:
            # This partition gets only base layers
            start_layer = pp_rank * base_layers
            end_layer = start_layer + base_layers

    return (start_layer, end_layer)
''')

# sglang 0.4.9, sglang/srt/models/qwen2.py:308 (Qwen2Model.forward)
QWEN2_FORWARD_049 = (308, r"""
    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        forward_batch: ForwardBatch,
        input_embeds: torch.Tensor = None,
        pp_proxy_tensors: Optional[PPProxyTensors] = None,
    ) -> Union[torch.Tensor, PPProxyTensors]:
        if self.pp_group.is_first_rank:
            if input_embeds is None:
                hidden_states = self.embed_tokens(input_ids)
            else:
                hidden_states = input_embeds
            residual = None
        else:
            assert pp_proxy_tensors is not None
            hidden_states = pp_proxy_tensors["hidden_states"]
            residual = pp_proxy_tensors["residual"]

        aux_hidden_states = []
        for i in range(self.start_layer, self.end_layer):
            if i in self.layers_to_capture:
                aux_hidden_states.append(
                    hidden_states + residual if residual is not None else hidden_states
                )
            layer = self.layers[i]
            hidden_states, residual = layer(
                positions,
                hidden_states,
                forward_batch,
                residual,
            )
        if not self.pp_group.is_last_rank:
            return PPProxyTensors(
                {
                    "hidden_states": hidden_states,
                    "residual": residual,
                }
            )
        else:
            if hidden_states.shape[0] != 0:
                if residual is None:
                    hidden_states = self.norm(hidden_states)
                else:
                    hidden_states, _ = self.norm(hidden_states, residual)

        if len(aux_hidden_states) == 0:
            return hidden_states

        return hidden_states, aux_hidden_states
""")

# sglang 0.5.23, sglang/srt/models/gpt_oss.py:688 (GptOssModel.forward)
GPT_OSS_FORWARD_0523 = (688, r"""
    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        forward_batch: ForwardBatch,
        input_embeds: torch.Tensor = None,
        pp_proxy_tensors: Optional[PPProxyTensors] = None,
    ) -> Union[torch.Tensor, PPProxyTensors]:
        if self.pp_group.is_first_rank:
            if input_embeds is None:
                hidden_states = self.embed_tokens(input_ids)
            else:
                hidden_states = input_embeds
            residual_batch.start(forward_batch)
        else:
            assert pp_proxy_tensors is not None
            hidden_states = self.layers[self.start_layer].attn_boundary.from_pp(
                pp_proxy_tensors, forward_batch
            )

        # Capture hidden-state boundaries: boundary 0 is the embedding output,
        # and boundary i + 1 is the output after transformer block i.
        aux_hidden_states = AuxHiddenStateList()
        for i in range(self.start_layer, self.end_layer):
            with get_global_expert_distribution_recorder().with_current_layer(i):
                layer = self.layers[i]
                hidden_states = layer(
                    positions,
                    hidden_states,
                    forward_batch,
                    capture_output=aux_hidden_states.capture
                    if i in self.layers_to_capture
                    else None,
                )
        if not self.pp_group.is_last_rank:
            return residual_batch.to_pp(hidden_states, forward_batch)
        else:
            hidden_states = residual_batch.complete_output(hidden_states, forward_batch)
            if hidden_states.shape[0] != 0:
                hidden_states = residual_batch.final_norm(
                    hidden_states,
                    forward_batch,
                    self.norm,
                    capture=aux_hidden_states.capture
                    if self.end_layer in self.layers_to_capture
                    else None,
                )
            elif self.end_layer in self.layers_to_capture:
                aux_hidden_states.append(
                    residual_batch.snapshot(hidden_states, forward_batch)
                )
        if len(aux_hidden_states) == 0:
            return hidden_states

        return hidden_states, aux_hidden_states
""")

# sglang 0.5.6, sglang/srt/models/qwen2_moe.py:569 (Qwen2MoeModel.forward)
QWEN2_MOE_FORWARD_056 = (569, r"""
    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        forward_batch: ForwardBatch,
        input_embeds: torch.Tensor = None,
        pp_proxy_tensors: Optional[PPProxyTensors] = None,
    ) -> Union[torch.Tensor, PPProxyTensors]:
        if self.pp_group.is_first_rank:
            if input_embeds is None:
                hidden_states = self.embed_tokens(input_ids)
            else:
                hidden_states = input_embeds
            residual = None
        else:
            assert pp_proxy_tensors is not None
            hidden_states = pp_proxy_tensors["hidden_states"]
            residual = pp_proxy_tensors["residual"]

        aux_hidden_states = []
        if forward_batch.can_run_tbo:
            hidden_states, residual = model_forward_maybe_tbo(
                layers=self.layers,
                enable_tbo=True,
                input_data_scatter_mode=ScatterMode.model_input_output(),
                positions=positions,
                forward_batch=forward_batch,
                hidden_states=hidden_states,
                residual=residual,
            )
        else:
            for i in range(self.start_layer, self.end_layer):
                ctx = (
                    nullcontext()
                    if get_global_server_args().enable_piecewise_cuda_graph
                    else get_global_expert_distribution_recorder().with_current_layer(i)
                )
                with ctx:
                    layer = self.layers[i]
                    hidden_states, residual = layer(
                        positions,
                        hidden_states,
                        forward_batch,
                        residual,
                        captured_last_layer_outputs=(
                            aux_hidden_states
                            if getattr(layer, "_is_layer_to_capture", False)
                            else None
                        ),
                    )
        if not self.pp_group.is_last_rank:
            return PPProxyTensors(
                {
                    "hidden_states": hidden_states,
                    "residual": residual,
                }
            )
        else:
            if hidden_states.shape[0] != 0:
                if residual is None:
                    hidden_states = self.norm(hidden_states)
                else:
                    hidden_states, _ = self.norm(hidden_states, residual)

        if len(aux_hidden_states) == 0:
            return hidden_states

        return hidden_states, aux_hidden_states
""")


# sglang 0.5.16, sglang/srt/models/minimax_m2.py:1248 (MiniMaxM2ForCausalLM.set_eagle3_layers_to_capture)
MINIMAX_M2_0516 = (1248, r"""
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[list[int]] = None):
        if not get_pp_group().is_last_rank:
            return

        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [
                2,
                num_layers // 2,
                num_layers - 3,
            ]  # Specific layers for EAGLE3 support
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]
""")

# sglang 0.5.23, sglang/srt/models/qwen3_vl.py:1777 (Qwen3VLForConditionalGeneration.set_eagle3_layers_to_capture)
QWEN3_VL_0523 = (1777, r"""
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[List[int]] = None):
        if not self.pp_group.is_last_rank:
            return
        self.capture_aux_hidden_states = True
        self.model.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            layers_to_capture = [
                2,
                num_layers // 2,
                num_layers - 3,
            ]  # Specific layers for EAGLE3 support
        else:
            layers_to_capture = [val + 1 for val in layer_ids]

        if hasattr(self.model, "set_eagle3_layers_to_capture"):
            self.model.set_eagle3_layers_to_capture(layers_to_capture)
        else:
            self.model.layers_to_capture = layers_to_capture
""")

# sglang 0.5.23, sglang/srt/models/minimax_m3.py:2056 (MiniMaxM3SparseForCausalLM.set_eagle3_layers_to_capture)
MINIMAX_M3_0523 = (2056, r"""
    def set_eagle3_layers_to_capture(self, layer_ids: Optional[list[int]] = None):
        if not self.pp_group.is_last_rank:
            return

        self.capture_aux_hidden_states = True
        if layer_ids is None:
            num_layers = self.config.num_hidden_layers
            self.model.layers_to_capture = [
                2,
                num_layers // 2,
                num_layers - 3,
            ]
        else:
            self.model.layers_to_capture = [val + 1 for val in layer_ids]

        # forward checks the per-layer ``_is_layer_to_capture`` flag, not the id
        # list, so set it explicitly (mirrors qwen3_next/qwen2_moe).
        for layer_id in self.model.layers_to_capture:
            if 0 <= layer_id < len(self.model.layers):
                setattr(self.model.layers[layer_id], "_is_layer_to_capture", True)
""")

# sglang 0.5.23, sglang/srt/models/qwen3_5.py:1908 (Qwen3_5ForCausalLM.forward)
QWEN3_5_FORWARD_0523 = (1908, r"""
    def forward(
        self,
        input_ids: torch.Tensor,
        positions: torch.Tensor,
        forward_batch: ForwardBatch,
        input_embeds: Optional[torch.Tensor] = None,
        pp_proxy_tensors: Optional[PPProxyTensors] = None,
        input_deepstack_embeds: Optional[torch.Tensor] = None,
    ) -> Union[torch.Tensor, PPProxyTensors]:
        if (
            self.flashinfer_mnnvl_cutedsl_fusion is not None
            and input_deepstack_embeds is not None
            and input_deepstack_embeds.numel() > 0
        ):
            raise RuntimeError(
                "Qwen3.5 FlashInfer MNNVL CuTe DSL fusion currently supports "
                "the text-only path, not deepstack visual inputs"
            )

        # Initialize hidden states
        if self.pp_group.is_first_rank:
            if input_embeds is None:
                hidden_states = self.embed_tokens(input_ids)
            else:
                hidden_states = input_embeds
            residual_batch.start(forward_batch)
        else:
            assert pp_proxy_tensors is not None
            hidden_states = self.layers[self.start_layer].attn_boundary.from_pp(
                pp_proxy_tensors, forward_batch
            )

        aux_hidden_states = AuxHiddenStateList()
        # Pass through decoder layers
        for layer_idx in range(self.start_layer, self.end_layer):
            layer = self.layers[layer_idx]
            with get_global_expert_distribution_recorder().with_current_layer(
                layer_idx
            ):
                hidden_states = layer(
                    positions=positions,
                    hidden_states=hidden_states,
                    forward_batch=forward_batch,
                    captured_last_layer_outputs=aux_hidden_states
                    if getattr(layer, "_is_layer_to_capture", False)
                    else None,
                )

            # Process deepstack embeddings if provided
            if (
                input_deepstack_embeds is not None
                and input_deepstack_embeds.numel() > 0
                and layer_idx < 3
            ):
                sep = self.hidden_size * layer_idx
                hidden_states = residual_batch.add_to_output(
                    hidden_states,
                    forward_batch,
                    input_deepstack_embeds[:, sep : sep + self.hidden_size],
                )

        if not self.pp_group.is_last_rank:
            return residual_batch.to_pp(hidden_states, forward_batch)

        hidden_states = residual_batch.final_norm(
            hidden_states,
            forward_batch,
            self.norm,
            finalize_norm=self.flashinfer_mnnvl_cutedsl_fusion,
            skip_empty=True,
        )

        if len(aux_hidden_states) == 0:
            return hidden_states

        return hidden_states, aux_hidden_states
""")


def run(pair, ids, *, layers=61, last_rank=True, **env):
    first_line, source = pair
    bound = {"self.config": {"num_hidden_layers": layers}, "self.pp_group.is_last_rank": last_rank}
    bound.update(env)
    return evaluate_function(source, args={"layer_ids": ids}, env=bound, first_line=first_line)


# ----------------------------------------------------------------- setters


@pytest.mark.parametrize("pair", [QWEN2_0523, DEEPSEEK_V2_056, QWEN2_5_VL_056])
def test_explicit_ids_get_plus_one(pair):
    outcome = run(pair, [2, 30, 58])
    assert outcome.writes["self.model.layers_to_capture"] == [3, 31, 59]
    assert outcome.writes["self.capture_aux_hidden_states"] is True
    assert outcome.ended_normally and outcome.unknowns == ()


@pytest.mark.parametrize("pair", [QWEN2_0523, DEEPSEEK_V2_056, DEEPSEEK_V2_0523, GPT_OSS_0523, QWEN2_5_VL_056])
def test_fallback_without_ids(pair):
    outcome = run(pair, None, layers=61)
    assert outcome.writes["self.model.layers_to_capture"] == [2, 30, 58]
    outcome = run(pair, None, layers=6)
    assert outcome.writes["self.model.layers_to_capture"] == [2, 3, 3]


def test_fallback_write_line_and_branch_are_file_lines():
    outcome = run(QWEN2_0523, None, layers=28)
    assert outcome.writes["self.model.layers_to_capture"] == [2, 14, 25]
    # qwen2.py:787 `if layer_ids is None:` then the write at 788 (0.5.23)
    assert [(b.line, b.taken) for b in outcome.branches] == [(782, "none"), (786, "if")]
    assert outcome.write_lines["self.model.layers_to_capture"] == 788


def test_deepseek_0523_first_id_rule():
    # Explicit ids get +1 only when the first id is 1; otherwise they are kept as given.
    assert run(DEEPSEEK_V2_0523, [1, 2, 3]).writes["self.model.layers_to_capture"] == [2, 3, 4]
    assert run(DEEPSEEK_V2_0523, [0, 2, 4]).writes["self.model.layers_to_capture"] == [0, 2, 4]
    outcome = run(DEEPSEEK_V2_0523, [2, 30, 58])
    assert outcome.writes["self.model.layers_to_capture"] == [2, 30, 58]
    assert (outcome.branches[-1].line, outcome.branches[-1].condition, outcome.branches[-1].taken) == (
        3470, "layer_ids and layer_ids[0] == 1", "else")


def test_deepseek_056_always_shifts():
    assert run(DEEPSEEK_V2_056, [0, 2, 4]).writes["self.model.layers_to_capture"] == [1, 3, 5]


def test_gpt_oss_0523_keeps_ids_that_reach_the_final_boundary():
    assert run(GPT_OSS_0523, [1, 2, 3], layers=6).writes["self.model.layers_to_capture"] == [2, 3, 4]
    assert run(GPT_OSS_0523, [1, 3, 6], layers=6).writes["self.model.layers_to_capture"] == [1, 3, 6]


@pytest.mark.parametrize("pair, line", [(QWEN2_0523, 783), (DEEPSEEK_V2_0523, 3460), (GPT_OSS_0523, 1339), (QWEN3_MOE_056, 830)])
def test_pipeline_guard_returns_early_off_the_last_rank(pair, line):
    outcome = run(pair, [1, 2, 3], last_rank=False)
    assert outcome.writes == {}
    assert outcome.returned_early is not None
    assert outcome.returned_early.line == line
    assert outcome.returned_early.condition == "not self.pp_group.is_last_rank"


def test_qwen2_5_vl_056_has_no_pipeline_guard():
    outcome = run(QWEN2_5_VL_056, [1, 2, 3], last_rank=False)
    assert outcome.returned_early is None
    assert outcome.writes["self.model.layers_to_capture"] == [2, 3, 4]
    assert outcome.writes["self.model.capture_aux_hidden_states"] is True


def test_unbound_rank_is_unknown_not_guessed():
    first_line, source = QWEN2_0523
    outcome = evaluate_function(source, args={"layer_ids": [1, 2, 3]}, env={}, first_line=first_line)
    assert not outcome.complete
    assert outcome.writes == {}
    assert outcome.stopped.line == 782
    assert "self.pp_group.is_last_rank" in outcome.stopped.why


def test_unbound_config_gives_an_unknown_write():
    first_line, source = QWEN2_0523
    outcome = evaluate_function(source, args={"layer_ids": None}, env={"self.pp_group.is_last_rank": True}, first_line=first_line)
    value = outcome.writes["self.model.layers_to_capture"]
    # [2, n // 2, n - 3] with n unknown: the literal 2 is known, the rest is not.
    assert value[0] == 2 and is_unknown(value[1]) and is_unknown(value[2])
    assert any(u.line == 788 and "num_hidden_layers" in u.why for u in outcome.unknowns)


def test_qwen3_moe_delegates_to_its_model():
    outcome = run(QWEN3_MOE_056, [1, 2, 3], layers=48)
    assert outcome.writes == {"self.capture_aux_hidden_states": True}
    [call] = outcome.calls
    assert (call.receiver, call.method, call.args, call.line) == ("self.model", "set_eagle3_layers_to_capture", ([2, 3, 4],), 843)
    [call] = run(QWEN3_MOE_056, None, layers=48).calls
    assert call.args == ([2, 24, 45],) and call.line == 835


def test_qwen2_moe_model_marks_layers():
    first_line, source = QWEN2_MOE_MODEL_056
    outcome = evaluate_function(source, args={"layers_to_capture": [2, 3, 4]}, env={}, first_line=first_line)
    assert outcome.writes == {
        "self.layers_to_capture": [2, 3, 4],
        "self.layers[2]._is_layer_to_capture": True,
        "self.layers[3]._is_layer_to_capture": True,
        "self.layers[4]._is_layer_to_capture": True,
    }


def test_kimi_k25_delegates_when_language_model_has_the_setter():
    first_line, source = KIMI_K25_0523
    env = {"self.language_model": Obj("DeepseekV3ForCausalLM", methods=frozenset({"set_eagle3_layers_to_capture"}))}
    outcome = evaluate_function(source, args={"layer_ids": [2, 30, 58]}, env=env, first_line=first_line)
    assert outcome.ended_normally
    [call] = outcome.calls
    assert (call.receiver, call.method, call.args, call.line) == ("self.language_model", "set_eagle3_layers_to_capture", ([2, 30, 58],), 939)
    # Without ids the wrapper passes None on: the inner setter decides the fallback.
    outcome = evaluate_function(source, args={}, env=env, first_line=first_line)
    assert outcome.calls[0].args == (None,)


def test_kimi_k25_raises_without_language_model():
    first_line, source = KIMI_K25_0523
    outcome = evaluate_function(source, args={"layer_ids": [1]}, env={"self.language_model": None}, first_line=first_line)
    assert outcome.raised is not None and outcome.raised.line == 935
    assert outcome.raised.source.startswith("raise AttributeError(")


def test_kimi_k25_hasattr_unknown_unless_bound():
    first_line, source = KIMI_K25_0523
    outcome = evaluate_function(source, args={"layer_ids": [1]}, env={}, first_line=first_line)
    assert not outcome.complete and outcome.calls == ()
    assert "hasattr" in outcome.stopped.why or "not bound" in outcome.stopped.why
    # Binding the method's dotted name makes hasattr true.
    bound = {"self.language_model": Obj("LanguageModel"), "self.language_model.set_eagle3_layers_to_capture": "method"}
    outcome = evaluate_function(source, args={"layer_ids": [1]}, env=bound, first_line=first_line)
    assert outcome.ended_normally and outcome.calls[0].receiver == "self.language_model"


def test_mllama4_049_guarded_delegation():
    first_line, source = MLLAMA4_049
    env = {"self.language_model": Obj("Llama4ForCausalLM", methods=frozenset({"set_eagle3_layers_to_capture"}))}
    outcome = evaluate_function(source, args={"layer_ids": None}, env=env, first_line=first_line)
    assert [(c.receiver, c.args) for c in outcome.calls] == [("self.language_model", (None,))]
    # A language model known to lack the method: the call is skipped, silently.
    env = {"self.language_model": Obj("Other", closed=True)}
    outcome = evaluate_function(source, args={"layer_ids": [1]}, env=env, first_line=first_line)
    assert outcome.calls == () and outcome.ended_normally


# ----------------------------------------------------------------- get_pp_indices


def pp_ranges(pair, layers, pp, environ=None):
    first_line, source = pair
    out = []
    for rank in range(pp):
        outcome = evaluate_function(source, args={"num_hidden_layers": layers, "pp_rank": rank, "pp_size": pp},
                                    env={"os.environ": environ or {}}, first_line=first_line)
        out.append(outcome.return_value)
    return out


def test_get_pp_indices_remainder_rules_differ_between_releases():
    # 0.4.9: the last partition takes the remainder; 0.5.23: the last N partitions take one extra each.
    assert pp_ranges(GET_PP_INDICES_049, 62, 4) == [(0, 15), (15, 30), (30, 45), (45, 62)]
    assert pp_ranges(GET_PP_INDICES_0523, 62, 4) == [(0, 15), (15, 30), (30, 46), (46, 62)]
    assert pp_ranges(GET_PP_INDICES_0523, 61, 4) == [(0, 15), (15, 30), (30, 45), (45, 61)]


def test_get_pp_indices_partition_env_var():
    environ = {"SGLANG_PP_LAYER_PARTITION": "10,10,41"}
    assert pp_ranges(GET_PP_INDICES_0523, 61, 3, environ) == [(0, 10), (10, 20), (20, 61)]
    first_line, source = GET_PP_INDICES_0523
    outcome = evaluate_function(source, args={"num_hidden_layers": 61, "pp_rank": 0, "pp_size": 2},
                                env={"os.environ": environ}, first_line=first_line)
    assert outcome.raised is not None and "ValueError" in outcome.raised.source


def test_get_pp_indices_unknown_environment():
    first_line, source = GET_PP_INDICES_0523
    outcome = evaluate_function(source, args={"num_hidden_layers": 61, "pp_rank": 0, "pp_size": 2}, env={}, first_line=first_line)
    assert not outcome.complete
    assert "environment" in outcome.stopped.why


# ----------------------------------------------------------------- decoder loops


LOOP_ENV = {"self.start_layer": 0, "self.end_layer": 6, "self.pp_group.is_first_rank": True, "self.pp_group.is_last_rank": True}


def test_qwen2_loop_drops_the_last_layer_id():
    # Runtime truth (runtime-harness-notes): ids [0,2,5] on L=6 -> [1,3,6] -> outputs [0,2].
    first_line, source = QWEN2_FORWARD_049
    result = captured_indices(source, [1, 3, 6], LOOP_ENV, first_line=first_line)
    assert result.complete
    assert result.visited == (0, 1, 2, 3, 4, 5)
    assert result.captured == (1, 3)
    assert result.captured_outputs == (0, 2)
    assert result.never_visited == (6,)
    assert result.loop_line == 328


def test_qwen2_loop_collapses_duplicate_fallback_entries():
    first_line, source = QWEN2_FORWARD_049
    result = captured_indices(source, [2, 3, 3], LOOP_ENV, first_line=first_line)
    assert result.captured == (2, 3) and result.captured_outputs == (1, 2)


def test_loop_on_a_later_pipeline_stage():
    first_line, source = QWEN2_FORWARD_049
    env = dict(LOOP_ENV, **{"self.start_layer": 3, "self.pp_group.is_first_rank": False})
    result = captured_indices(source, [1, 4, 5], env, first_line=first_line)
    assert result.visited == (3, 4, 5)
    assert result.captured == (4, 5) and result.never_visited == (1,)


def test_gpt_oss_0523_captures_the_final_boundary_after_the_loop():
    first_line, source = GPT_OSS_FORWARD_0523
    result = captured_indices(source, [1, 3, 6], LOOP_ENV, first_line=first_line)
    assert result.captured == (1, 3, 6)
    assert result.captured_outputs == (0, 2, 5)
    final = [e for e in result.events if not e.in_loop]
    assert [(e.index, e.condition) for e in final] == [(6, None)]


def test_unknown_loop_range_is_reported():
    first_line, source = QWEN2_FORWARD_049
    result = captured_indices(source, [1, 2, 3], {"self.pp_group.is_first_rank": True}, first_line=first_line)
    assert not result.complete
    assert result.captured == ()
    assert any(u.line == 328 and u.why.startswith("loop range") for u in result.unknowns)


def test_qwen2_moe_marker_loop():
    first_line, source = QWEN2_MOE_FORWARD_056
    layers = [Obj(f"layers[{i}]", attrs=((("_is_layer_to_capture", True),) if i in (2, 4) else ()), closed=True) for i in range(6)]
    env = dict(LOOP_ENV, **{"forward_batch.can_run_tbo": False, "self.layers": layers})
    result = captured_indices(source, [], env, first_line=first_line, marker_attribute="_is_layer_to_capture")
    assert result.complete
    assert result.captured == (2, 4)
    # Two-batch overlap runs the layers elsewhere: without binding it, the captures hang on it.
    env.pop("forward_batch.can_run_tbo")
    result = captured_indices(source, [], env, first_line=first_line, marker_attribute="_is_layer_to_capture")
    assert not result.complete
    assert {e.condition for e in result.events} == {"forward_batch.can_run_tbo"}


def test_forward_without_a_capture_loop():
    result = captured_indices("def forward(self, x):\n    return x\n", [1], {})
    assert not result.complete and result.loop_line is None
    assert "no loop" in result.unknowns[-1].why


# ----------------------------------------------------------------- constructs


def ev(source, env=None, **args):
    return evaluate_function(source, args=args, env=env or {})


def test_arithmetic_and_builtins():
    source = """
def f(self, xs):
    n = self.config.num_hidden_layers
    self.a = [n // 2, n % 7, n ** 2, -n, n / 2]
    self.b = (len(xs), min(xs), max(xs), sorted(xs), list(range(1, 4)), sum(xs))
    self.c = [v * 2 for v in xs if v > 1]
    self.d = {k: v for k, v in zip(["a", "b"], [1, 2])}
    self.e = [i for i, _ in enumerate(xs)][-1]
    self.f = xs[1:]
"""
    o = ev(source, {"self.config": {"num_hidden_layers": 61}}, xs=[3, 1, 2])
    assert o.writes["self.a"] == [30, 5, 3721, -61, 30.5]
    assert o.writes["self.b"] == (3, 1, 3, [1, 2, 3], [1, 2, 3], 6)
    assert o.writes["self.c"] == [6, 4]
    assert o.writes["self.d"] == {"a": 1, "b": 2}
    assert o.writes["self.e"] == 2
    assert o.writes["self.f"] == [1, 2]


def test_if_elif_else_and_branches():
    source = """
def f(self, x):
    if x < 0:
        self.kind = "neg"
    elif x in (1, 2) and not x is None:
        self.kind = "small"
    else:
        self.kind = "big"
"""
    assert ev(source, x=-1).writes == {"self.kind": "neg"}
    o = ev(source, x=2)
    assert o.writes == {"self.kind": "small"}
    assert [b.taken for b in o.branches] == ["if", "elif"]
    assert ev(source, x=7).writes == {"self.kind": "big"}


def test_getattr_default_and_hasattr():
    source = """
def f(self):
    self.n = getattr(self.config, "num_hidden_layers", 0)
    self.m = getattr(self.config, "num_nextn_predict_layers", 1)
    self.h = hasattr(self.config, "num_hidden_layers")
    self.g = hasattr(self.config, "missing")
"""
    o = ev(source, {"self.config": {"num_hidden_layers": 32}})
    assert (o.writes["self.n"], o.writes["self.m"], o.writes["self.h"]) == (32, 1, True)
    # A config class may define attributes its config.json omits: unknown, not False.
    assert is_unknown(o.writes["self.g"])


def test_unknown_propagates_with_the_expression():
    o = ev("def f(self):\n    self.x = self.config.hidden_size * 3\n", {"self.config": {}})
    value = o.writes["self.x"]
    assert isinstance(value, Unknown)
    assert "hidden_size" in value.why
    assert o.unknowns[0].line == 2


def test_boolean_short_circuit_decides_around_unknowns():
    source = """
def f(self):
    if self.unbound or True:
        self.a = 1
    if False and self.unbound:
        self.b = 1
    if self.unbound and False:
        self.c = 1
"""
    o = ev(source)
    assert o.writes == {"self.a": 1}
    assert o.complete


def test_undecidable_branch_merges_writes():
    source = """
def f(self, ids):
    self.same = 1
    if self.flag:
        self.v = [1]
        self.same = 2
    else:
        self.v = [2]
        self.same = 2
"""
    o = ev(source, ids=None)
    assert o.writes["self.same"] == 2
    assert is_unknown(o.writes["self.v"]) and "self.flag" in o.writes["self.v"].why
    assert o.branches[0].taken == "unknown"


def test_early_return_condition_is_the_enclosing_if():
    source = """
def f(self, ids):
    if ids:
        if ids[0] > 5:
            return
    self.x = ids
"""
    o = ev(source, ids=[9])
    assert o.returned_early.condition == "ids and ids[0] > 5"
    assert o.writes == {}
    assert ev(source, ids=[1]).writes == {"self.x": [1]}


def test_final_return_is_not_early():
    o = ev("def f(self, a):\n    b = a + 1\n    return b\n", a=1)
    assert o.returned_early is None and o.return_value == 2


def test_loops_append_and_augassign():
    source = """
def f(self, n):
    out = []
    total = 0
    for i in range(n):
        if i == 3:
            continue
        if i == 5:
            break
        out.append(i)
        total += i
    self.out, self.total = out, total
"""
    o = ev(source, n=10)
    assert o.writes == {"self.out": [0, 1, 2, 4], "self.total": 7}


def test_fstrings_and_raise():
    o = ev('def f(self, n):\n    if n > 1:\n        raise ValueError(f"{n=} too big")\n', n=3)
    assert o.raised.line == 3 and o.raised.condition == "n > 1"


def test_indented_source_is_dedented():
    source = "    def f(self, a=4):\n        self.x = a\n"
    assert evaluate_function(source, args={}, env={}).writes == {"self.x": 4}


def test_unknown_parameter_raises_value_error():
    with pytest.raises(ValueError):
        evaluate_function("def f(self, a):\n    pass\n", args={"b": 1}, env={})


# ----------------------------------------------------------------- accessors, absent attributes, guards


def test_pp_group_accessor_can_be_bound():
    first_line, source = MINIMAX_M2_0516
    env = {"self.config": {"num_hidden_layers": 62}}
    outcome = evaluate_function(source, args={"layer_ids": [1, 2]}, env=dict(env, **{"get_pp_group().is_last_rank": False}), first_line=first_line)
    assert outcome.returned_early.line == 1250 and outcome.returned_early.condition == "not get_pp_group().is_last_rank"
    outcome = evaluate_function(source, args={"layer_ids": None}, env=dict(env, **{"get_pp_group().is_last_rank": True}), first_line=first_line)
    assert outcome.writes["self.model.layers_to_capture"] == [2, 31, 59]


def test_qwen3_vl_0523_hasattr_on_the_inner_model():
    first_line, source = QWEN3_VL_0523
    env = {"self.config": {"num_hidden_layers": 36}, "self.pp_group.is_last_rank": True}
    # The inner model class lacks the setter: the wrapper writes the list itself.
    outcome = evaluate_function(source, args={"layer_ids": [1, 17, 32]},
                                env=dict(env, **{"self.model.set_eagle3_layers_to_capture": ABSENT}), first_line=first_line)
    assert outcome.writes["self.model.layers_to_capture"] == [2, 18, 33]
    assert outcome.calls == ()
    # It has the setter (the MoE language model): the list is passed on.
    outcome = evaluate_function(source, args={"layer_ids": None},
                                env=dict(env, **{"self.model": Obj("Qwen3MoeLLMModel", methods=frozenset({"set_eagle3_layers_to_capture"}))}),
                                first_line=first_line)
    assert [(c.receiver, c.args) for c in outcome.calls] == [("self.model", ([2, 18, 33],))]
    # Unbound: both sides are followed and the write depends on the undecided hasattr.
    outcome = evaluate_function(source, args={"layer_ids": [1]}, env=env, first_line=first_line)
    assert is_unknown(outcome.writes["self.model.layers_to_capture"])
    assert outcome.calls[0].condition == 'hasattr(self.model, "set_eagle3_layers_to_capture")'


def test_minimax_m3_0523_marks_layers_in_range():
    first_line, source = MINIMAX_M3_0523
    layers = [Obj(f"layers[{i}]") for i in range(6)]
    env = {"self.config": {"num_hidden_layers": 6}, "self.pp_group.is_last_rank": True, "self.model.layers": layers}
    outcome = evaluate_function(source, args={"layer_ids": [0, 2, 5]}, env=env, first_line=first_line)
    assert outcome.writes["self.model.layers_to_capture"] == [1, 3, 6]
    marks = sorted(k for k in outcome.writes if k.endswith("._is_layer_to_capture"))
    # Index 6 is out of range and skipped by its own `0 <= layer_id < len(...)` check.
    assert marks == ["self.model.layers[1]._is_layer_to_capture", "self.model.layers[3]._is_layer_to_capture"]


def test_qwen3_5_0523_forward_guard_that_raises_before_the_loop():
    first_line, source = QWEN3_5_FORWARD_0523
    layers = [Obj(f"layers[{i}]", attrs=((("_is_layer_to_capture", True),) if i in (1, 3) else ()), closed=True) for i in range(6)]
    env = {"self.start_layer": 0, "self.end_layer": 6, "self.pp_group.is_first_rank": True,
           "self.pp_group.is_last_rank": True, "self.layers": layers}
    result = captured_indices(source, [1, 3], env, first_line=first_line, marker_attribute="_is_layer_to_capture")
    assert result.complete
    assert result.captured == (1, 3) and result.captured_outputs == (0, 2)
    # The RuntimeError guard on deepstack inputs is assumed not taken, and said so.
    [note] = [u for u in result.unknowns if u.why.startswith("assumed the side")]
    assert note.line == 1917
