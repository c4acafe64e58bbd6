"""Pipeline-parallel patch (example, vllm-ascend's patch_eagle3_pp_aux.py shape): the decoder's
forward is replaced at run time, per class, by a forward that passes the captured states on."""

from vllm.distributed import get_pp_group


def _make_mixin_forward():
    def pp_forward(self, hidden_states, intermediate_tensors=None):
        residual = None
        aux_hidden_states = self._maybe_add_hidden_state([], 0, hidden_states, residual)
        for idx, layer in enumerate(self.layers):
            hidden_states, residual = layer(hidden_states, residual)
            self._maybe_add_hidden_state(aux_hidden_states, idx + 1, hidden_states, residual)
        if not get_pp_group().is_last_rank:
            return {"hidden_states": hidden_states, "aux": aux_hidden_states}
        return hidden_states, aux_hidden_states

    return pp_forward


def patch_pp_forward(inner_model):
    from vllm.model_executor.models.interfaces import EagleModelMixin

    if isinstance(inner_model, EagleModelMixin):
        make_forward = _make_mixin_forward
    else:
        return False
    if not getattr(inner_model, "_pp_forward_patched", False):
        inner_model.forward = make_forward().__get__(inner_model, type(inner_model))
    return True
