"""The static-batch baseline the engine model is measured against (issue 19's predict-serving).

For an offline max-throughput run, the static model needs a batch: we give it the largest batch
(at most the engine's ``max_num_seqs``) whose whole prompt + output cache fits in the memory
the static model reserves (costmodels.serving.memory: weights, the cache of every sequence at
its full length, one prompt's activations), and take its ``tokens_per_s_per_gpu`` (decode steps
at the mean context, stretched by one prompt's prefill per finishing sequence) times the GPUs.
Nothing of the engine model (paged blocks, batched prefill, mixed iterations, its fitted
constants) enters.
"""

from __future__ import annotations

from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.layout import ServingLayout
from costmodels.serving.predict import predict_serving


def static_tokens_per_s(
    shape: TransformerShape,
    layout: ServingLayout,
    cluster: LLMCluster,
    prompt_len: int,
    output_len: int,
    max_batch: int,
) -> float:
    """Output tokens per second of one instance at the largest batch that fits."""

    def fits(batch: int) -> bool:
        return predict_serving(
            shape, layout, cluster, batch=batch, prompt_len=prompt_len, output_len=output_len
        ).fits

    low, high = 1, max(1, max_batch)
    while low < high:  # the largest batch that fits (1 if none does)
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    p = predict_serving(
        shape, layout, cluster, batch=low, prompt_len=prompt_len, output_len=output_len
    )
    return p.tokens_per_s_per_gpu * layout.gpus
