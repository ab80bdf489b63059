"""How a serving engine is configured, and how much paged KV cache one instance holds.

``EngineConfig`` is the scheduler's knobs, named as vLLM and TensorRT-LLM name them:

* ``max_num_seqs`` (vLLM ``--max-num-seqs``; TensorRT-LLM ``max_batch_size``): sequences
  scheduled together at most.
* ``max_batched_tokens`` (vLLM ``--max-num-batched-tokens``; TensorRT-LLM ``max_num_tokens``):
  the token budget of one iteration, decode tokens and prefill chunks together.
* ``chunked_prefill``: a prompt may be split over iterations to fill the budget (Sarathi-Serve;
  vLLM V1's default). Off, a prompt runs whole in one iteration once it fits the budget left
  (a prompt longer than the whole budget runs alone).
* ``policy``: ``"reserve"`` is TensorRT-LLM's default capacity policy GUARANTEED_NO_EVICT (a
  request starts only when blocks for its prompt plus its whole output are free, so nothing is
  ever evicted; TensorRT-LLM "Useful Runtime Options": "guarantee that a started request is never
  paused"); ``"live"`` is vLLM's paged allocation (Kwon et al., SOSP '23, arXiv:2309.06180):
  blocks of ``block_size`` tokens are taken as the context grows, and when none is free the most
  recently started request is preempted and later recomputed (vLLM's default recompute mode;
  TensorRT-LLM's MAX_UTILIZATION pauses requests the same way).
* ``block_size``: tokens per KV block (vLLM's default 16, ``CacheConfig.DEFAULT_BLOCK_SIZE``).
* ``prefix_caching``: the blocks of a prompt prefix shared by every request (``prefix_len`` of
  the request set) are computed once, kept, and reused (vLLM's automatic prefix caching,
  TensorRT-LLM's KV reuse); only whole blocks are shared. Cached blocks stay resident (no
  eviction is modelled).
* ``prefill_first``: an iteration with prompt work carries no decode tokens (vLLM V0's
  scheduler, SGLang without ``--enable-mixed-chunk``); off, decodes are scheduled first and
  prefill chunks fill the rest of the budget (vLLM V1, TensorRT-LLM).
* Speculative decoding is off: every decode iteration emits one token per sequence.

``kv_pool_tokens``: the cache one instance holds. On the busiest GPU, what is left after the
weights, the activations of a full iteration (``max_batched_tokens`` tokens) and a runtime
reserve, times the engine's free-memory fraction (``kv_memory_fraction``; default the engine
model's 0.95, costmodels.serving.constants), over the bytes one token adds on that GPU, rounded
down to whole blocks; or, for engines that size by the whole GPU (``memory_of_total``: vLLM,
SGLang), the fraction of the whole memory less weights, activations and the reserve.
With sliding-window layers (GPT-OSS, issue 39) a pool token is one of the full-attention layers,
and the sliding layers' windows (``kv_cache.window_bytes_per_gpu`` each) are set aside first for
``max_num_seqs`` sequences, or for as many as the memory holds at a window's length each (a
sequence never caches more than its window on those layers). A hybrid Mamba-2 model's pool
token is one of its attention layers, and each running sequence's Mamba-2 state (issue 39,
costmodels.serving.ssm_state) is set aside the same way, for ``max_num_seqs`` sequences or as
many as the memory holds with one block each (vLLM sizes its Mamba cache by ``max_num_seqs``).
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.limits import MAX_BATCH, check_count
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.constants import ServingConstants, serving_constants
from costmodels.serving.kv_cache import pool_bytes_per_token_per_gpu, window_bytes_per_gpu
from costmodels.serving.layout import ServingLayout
from costmodels.serving.memory import activation_bytes, weight_bytes_per_gpu
from costmodels.serving.ssm_state import state_bytes_per_sequence_per_gpu

POLICIES: tuple[str, ...] = ("reserve", "live")
MAX_TOKEN_BUDGET = 2**20  # tokens of one iteration; far above any engine's setting
ASSUMPTIONS = (
    "continuous (in-flight) batching: every iteration runs the decode token of each running "
    "sequence and prefill chunks within the token budget, prompts batched together",
    "decodes are scheduled before new prefill work (vLLM V1 and TensorRT-LLM order); "
    "first-come first-served admission",
    "speculative decoding off: one token per sequence per decode iteration",
    "paged KV cache in blocks; the pool is what memory leaves after weights, one full "
    "iteration's activations and a runtime reserve, times the KV memory fraction",
    "an iteration prices its linear layers on all its tokens at once and attention per sequence",
    "host overheads per iteration and per scheduled sequence are fitted on TensorRT-LLM v0.20 "
    "max-throughput runs (costmodels/data/serving-constants.json)",
)


class EngineError(ValueError):
    """An engine configuration that cannot run; the message names the flag."""


@dataclass(frozen=True)
class EngineConfig:
    max_num_seqs: int = 256
    max_batched_tokens: int = 8192
    block_size: int = 16
    chunked_prefill: bool = True
    policy: str = "live"
    prefix_caching: bool = False
    prefill_first: bool = False
    # the share of memory the KV cache gets: None is the engine model's 0.95 of what is free
    # after weights and activations; ``memory_of_total`` makes it a share of the whole GPU that
    # weights, activations and the cache share (vLLM's gpu_memory_utilization, SGLang's
    # mem_fraction_static) instead of a share of the free memory (TensorRT-LLM's
    # free_gpu_memory_fraction)
    kv_memory_fraction: float | None = None
    memory_of_total: bool = False
    # the largest iteration (in tokens) the engine replays from a captured CUDA graph: larger
    # ones launch every kernel from the host (vLLM V1's cudagraph capture sizes; None: every
    # iteration is replayed, 0: none is, as with --enforce-eager)
    cuda_graph_max_tokens: int | None = None
    # layers whose decode attention runs a kernel of one thread block per query head, each
    # reading its KV head's cache (TensorRT-LLM's masked MHA where its GQA kernel, XQA, cannot
    # run: costmodels.serving.engine_presets); 0: every layer reads each KV head once
    per_head_decode_layers: int = 0

    def __post_init__(self) -> None:
        try:
            check_count(self.max_num_seqs, "--max-num-seqs", MAX_BATCH)
            check_count(self.max_batched_tokens, "--max-batched-tokens", MAX_TOKEN_BUDGET)
            check_count(self.block_size, "--block-size", 4096)
            if self.cuda_graph_max_tokens is not None and self.cuda_graph_max_tokens != 0:
                check_count(self.cuda_graph_max_tokens, "--cuda-graph-max-tokens",
                            MAX_TOKEN_BUDGET)  # fmt: skip
        except ValueError as exc:
            raise EngineError(str(exc)) from None
        if self.per_head_decode_layers < 0:
            raise EngineError("per_head_decode_layers must be >= 0, got "
                              f"{self.per_head_decode_layers}")  # fmt: skip
        fraction = self.kv_memory_fraction
        if fraction is not None and not 0 < fraction <= 1:
            raise EngineError(f"--gpu-memory-fraction must be in (0, 1], got {fraction}")
        if self.policy not in POLICIES:
            raise EngineError(f"--policy must be one of {list(POLICIES)}, got {self.policy!r}")


@dataclass(frozen=True)
class KVPool:
    blocks: int
    block_size: int
    bytes_per_token_per_gpu: float
    free_bytes_per_gpu: float  # what the cache may use on the busiest GPU

    @property
    def tokens(self) -> int:
        return self.blocks * self.block_size


def kv_pool(
    shape: TransformerShape,
    layout: ServingLayout,
    cluster: LLMCluster,
    engine: EngineConfig,
    constants: ServingConstants | None = None,
) -> KVPool:
    """The paged cache of one instance (module docstring); EngineError when nothing is left."""
    c = constants or serving_constants()
    weights = weight_bytes_per_gpu(shape, layout)
    budget = engine.max_batched_tokens
    activations = activation_bytes(shape, layout, budget, min(budget, engine.max_num_seqs))
    memory, used = cluster.gpu.memory_bytes, weights + activations + c.runtime_reserve_bytes
    fraction = c.kv_memory_fraction if engine.kv_memory_fraction is None else (
        engine.kv_memory_fraction)  # fmt: skip
    free = memory * fraction - used if engine.memory_of_total else (memory - used) * fraction
    per_token = pool_bytes_per_token_per_gpu(shape, layout)
    window = window_bytes_per_gpu(shape, layout)
    tokens_free = free
    if window and free > 0:  # sliding layers: each running sequence's window, set aside
        at_window = free // (window + per_token * shape.sliding_window)
        tokens_free -= window * min(engine.max_num_seqs, at_window)
    state = state_bytes_per_sequence_per_gpu(shape, layout)
    if state and free > 0:  # Mamba-2 layers: one state per running sequence (issue 39)
        at_state = free // (state + per_token * engine.block_size)
        tokens_free -= state * min(engine.max_num_seqs, at_state)
    blocks = int(max(0.0, tokens_free) // (per_token * engine.block_size))
    if blocks < 1:
        raise EngineError(
            f"no memory left for the KV cache on a {cluster.gpu.name}: weights take "
            f"{weights / 2**30:.1f} GiB of {cluster.gpu.memory_bytes / 2**30:.0f} GiB per GPU "
            "(raise --tp/--pp, lower --precision or --max-batched-tokens)"
        )
    return KVPool(blocks, engine.block_size, per_token, free)
