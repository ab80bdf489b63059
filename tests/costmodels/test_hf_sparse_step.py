"""``decoder_sparse_step`` of a Qwen-MoE config (issue 35): transformers' Qwen2-MoE and Qwen3-MoE
make layer i a mixture-of-experts layer when ``(i + 1) % decoder_sparse_step == 0``, so a step
of 0 builds no model there (a division by zero). Both readers refuse it with one line naming the
key, instead of reading it as every layer MoE; absent means 1, 2 every second layer."""

from __future__ import annotations

import pytest

from costmodels.llm.hf_config import ConfigError as TrainingConfigError
from costmodels.llm.hf_config import shape_fields
from costmodels.serving.hf_config import serving_fields

QWEN_MOE = {"model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"],
            "hidden_size": 2048, "intermediate_size": 6144, "num_attention_heads": 32,
            "num_key_value_heads": 4, "head_dim": 128, "num_hidden_layers": 48,
            "vocab_size": 151936, "max_position_embeddings": 40960, "num_experts": 128,
            "num_experts_per_tok": 8, "moe_intermediate_size": 768}  # fmt: skip
READERS = [shape_fields, serving_fields]


@pytest.mark.parametrize("read", READERS)
def test_a_step_of_zero_is_refused(read) -> None:  # noqa: ANN001
    with pytest.raises(ValueError, match="decoder_sparse_step") as info:
        read({**QWEN_MOE, "decoder_sparse_step": 0}, "--hf-config q.json")
    assert "from 1" in str(info.value) and len(str(info.value).splitlines()) == 1
    assert isinstance(info.value, TrainingConfigError) or read is serving_fields


@pytest.mark.parametrize("read", READERS)
@pytest.mark.parametrize(("given", "step"), [({}, 1), ({"decoder_sparse_step": 2}, 2)])
def test_absent_means_every_layer_and_two_every_second(read, given, step) -> None:  # noqa: ANN001
    fields = read({**QWEN_MOE, **given}, "--hf-config q.json").fields
    assert fields["moe_layer_step"] == step
