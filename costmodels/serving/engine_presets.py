"""Serving engines as their users run them: each engine's documented defaults, by version, and
the one rule for the KV-cache dtype that every command (predict-serving, plan-serving, the
Serving pages) applies.

A preset fills every scheduler knob of costmodels.serving.engine.EngineConfig, whether the
engine replays CUDA graphs, whether its TP all-reduce is the engine's own one-shot kernel
(costmodels.serving.custom_allreduce) and the KV dtype of a quantized checkpoint. Flags the user
gives win over the preset (:func:`engine_settings`'s ``overrides``). Sources (read in the
engines' own repositories; values, not code):

vLLM 0.10 (V1 engine): ``EngineArgs.get_batch_defaults`` (vllm/engine/arg_utils.py): on a GPU
with at least 70 GiB that is not an A100 ("For GPUs like H100 and MI300x") the token budget is
8,192 for the OpenAI server and 16,384 for the offline ``LLM`` class, with 1,024 sequences;
otherwise 2,048 / 8,192 tokens and 256 sequences. V1 always chunks prefills, schedules running
(decoding) requests before waiting ones, preempts by recompute, uses 16-token blocks
(``CacheConfig``), CUDA graphs (unless ``--enforce-eager``) and its custom all-reduce inside a
node (``disable_custom_all_reduce=False``); ``--kv-cache-dtype auto`` keeps the model's 16-bit
dtype; ``gpu_memory_utilization`` 0.9 of the whole GPU holds weights, activations and cache
(EngineArgs; later versions raised it to 0.92). CUDA graphs are captured for iterations of
up to ``min(2 x max_num_seqs, 512)`` tokens (``SchedulerConfig.cuda_graph_sizes``' default since
vllm-project/vllm PR #20628, merged 2025-07-08, before the v0.10 release: read from the dates,
not checked against the v0.10.0 tag; capture sizes 1, 2, 4 and multiples of 8 up to it): a
larger iteration (a prefill chunk beside the decodes, or more than 512 decoding sequences) runs
the same compiled model without a graph, its kernels launched from the host.

vLLM 0.6 (V0 engine): 256 sequences, no chunked prefill (for models up to 32K context), a token
budget of ``max(max_model_len, 2048)`` (SchedulerConfig; here the longest request, as if
``--max-model-len`` were set to the workload), and the V0 scheduler runs waiting prompts before
decodes: an iteration with prefill work carries no decode tokens.

SGLang 0.4: ``chunked_prefill_size`` 2,048 below 35 GiB, 8,192 below 160 GiB (H100, H200),
16,384 above (B200, MI300X) (python/sglang/srt/server_args.py); ``max_running_requests`` is the
KV pool's tokens // 2 (python/sglang/srt/managers/scheduler.py), capped here at the request pool
of 4,096 (an ESTIMATE of ``req_to_token_pool``'s size); prefill batches run on their own unless
``--enable-mixed-chunk`` (off by default); a request is admitted only when its prompt and a
share of its output fit beside the running requests' (``new_token_ratio``, 0.7 x
``schedule_conservativeness`` 1.0 at start: python/sglang/global_config.py), modelled as
``reserve`` (its whole output; SGLang's rare retraction is not); one-token pages; CUDA graphs
and custom all-reduce on;
KV dtype ``auto``; ``mem_fraction_static`` 0.88 / 0.87 / 0.85 / 0.81 of the whole GPU at TP 1 /
2 / 4 / 8.

TensorRT-LLM 0.20 (``trtllm-bench``/PyTorch backend): ``max_batch_size`` and ``max_num_tokens``
from trtllm-bench's own heuristic (costmodels.serving.trtllm_bench), capacity
policy GUARANTEED_NO_EVICT (our ``reserve``; "Useful Runtime Options"), first-come-first-served
context chunking, generation requests scheduled with context chunks in one batch, CUDA graphs,
TensorRT-LLM's custom all-reduce, 32-token blocks (``KvCacheConfig.tokens_per_block``), and the
FP8 KV cache of ModelOpt FP8 and NVFP4 checkpoints (their ``kv_cache_quant_algo``). The cache
takes 0.95 of the
free memory offline (trtllm-bench, the v0.20 performance overview) and 0.9 when serving
(``KvCacheConfig.free_gpu_memory_fraction``'s default, docs "How to Change KV Cache Behavior").
Llama 4's chunked attention layers (``TransformerShape.chunked_layers``) get their chunk only
when the run's longest sequence reaches it (``Llama4Attention`` drops ``attention_chunk_size``
below ``max_seq_len``, tensorrt_llm/_torch/models/modeling_llama.py); XQA, the GQA decode kernel,
"does not support chunked attention at the moment, while MMHA supports chunked attention but is
slower" (NVIDIA/TensorRT-LLM PR #6306, 2025-07; its ``supportConfigCommon`` refuses a chunk), so
before Blackwell (whose trtllm-gen kernels take it) those layers decode with masked MHA, one
thread block per query head (costmodels.serving.iteration ``per_head_decode``). Which keys MMHA
reads on a chunked layer is not modelled: the whole context, as for the others. That v0.20 ran
this way is inferred from the dates and its 20,000/2,000 Llama 4 rows, not read from the v0.20
tag (0.21's notes list "full chunked attention support" for Llama 4 beyond 8K with a Hopper-only
slowdown).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any

from costmodels.hardware import GPU
from costmodels.llm.shapes import LLMCluster, TransformerShape
from costmodels.serving.engine import EngineConfig, EngineError, kv_pool
from costmodels.serving.layout import ServingLayout
from costmodels.serving.trtllm_bench import BLOCK, KV_FRACTION, bench_settings

ENGINES: tuple[str, ...] = ("vllm", "sglang", "trtllm")
VERSIONS: dict[str, tuple[str, ...]] = {
    "vllm": ("0.10", "0.6"),
    "sglang": ("0.4",),
    "trtllm": ("0.20",),
}
DEFAULT_ENGINE = "vllm"
GIB = 2**30
VLLM_MAX_CAPTURE = 512  # vLLM V1's largest CUDA-graph capture size (module docstring)
SGLANG_MAX_REQUESTS = 4096  # req_to_token_pool's size (ESTIMATE, see the module docstring)
SOURCES = {
    "vllm": "vllm/engine/arg_utils.py EngineArgs.get_batch_defaults (v0.10); V0 SchedulerConfig "
    "(v0.6)",
    "sglang": "python/sglang/srt/server_args.py (chunked_prefill_size), "
    "python/sglang/srt/managers/scheduler.py (max_running_requests)",
    "trtllm": "tensorrt_llm/bench/build/tuning.py (trtllm-bench's max_batch_size and "
    "max_num_tokens); docs 'Useful Runtime Options' (GUARANTEED_NO_EVICT)",
}


class EnginePresetError(ValueError):
    """An unknown engine or version; the message names the flag."""


@dataclass(frozen=True)
class EngineSettings:
    """What one engine runs with: the scheduler, CUDA graphs, all-reduce and KV dtype."""

    engine: str
    version: str
    config: EngineConfig
    cuda_graphs: bool
    custom_allreduce: bool
    kv_precision: str
    source: str
    overridden: tuple[str, ...] = field(default_factory=tuple)

    def echo(self) -> dict[str, Any]:
        """The settings as the output echoes them."""
        return {"engine": self.engine, "version": self.version, **asdict(self.config),
                "cuda_graphs": self.cuda_graphs, "custom_allreduce": self.custom_allreduce,
                "kv_precision": self.kv_precision, "source": self.source,
                "set_by_flags": list(self.overridden)}  # fmt: skip


def check_engine(engine: str, version: str | None) -> str:
    """The version to use (the newest when ``None``); EnginePresetError naming the flag."""
    if engine not in ENGINES:
        raise EnginePresetError(f"--engine must be one of {list(ENGINES)}, got {engine!r}")
    versions = VERSIONS[engine]
    if version is None:
        return versions[0]
    if version not in versions:
        raise EnginePresetError(
            f"--engine-version {version!r} is not modelled for {engine}: one of {list(versions)}"
        )
    return version


def custom_allreduce_for(engine: str, disabled: bool = False) -> bool:
    """Whether the engine runs TP all-reduces with its own kernel: all three do by default
    (vLLM ``--disable-custom-all-reduce``, SGLang ``--disable-custom-all-reduce``, TensorRT-LLM's
    AUTO all-reduce strategy)."""
    return engine in ENGINES and not disabled


def kv_precision_for(engine: str, precision: str, given: str | None = None) -> str:
    """THE KV-cache dtype rule of every command: what the user gave, else TensorRT-LLM's FP8
    cache for an FP8 or NVFP4 checkpoint, else the 16-bit dtype the engine's ``auto`` keeps."""
    if given is not None:
        return given
    if engine == "trtllm" and precision in ("fp8", "fp4"):
        return "fp8"
    return "fp16" if precision == "fp16" else "bf16"


def _vllm(version: str, gpu: GPU, mode: str, longest: int) -> EngineConfig:
    if version == "0.6":
        budget = max(longest, 2048)
        return EngineConfig(256, budget, 16, False, "live", prefill_first=True,
                            kv_memory_fraction=0.9, memory_of_total=True)  # fmt: skip
    large = gpu.memory_bytes >= 70 * GIB and "a100" not in gpu.name.lower()
    offline = mode == "offline"
    seqs, budget = (1024, 16384 if offline else 8192) if large else (256, 8192 if offline else 2048)
    return EngineConfig(seqs, budget, 16, True, "live", kv_memory_fraction=0.9,
                        memory_of_total=True,
                        cuda_graph_max_tokens=min(2 * seqs, VLLM_MAX_CAPTURE))  # fmt: skip


def _sglang(shape: TransformerShape, layout: ServingLayout, cluster: LLMCluster) -> EngineConfig:
    memory = cluster.gpu.memory_bytes
    chunk = 2048 if memory < 35 * GIB else 8192 if memory < 160 * GIB else 16384
    tp = layout.tp
    static = 0.81 if tp >= 8 else 0.85 if tp >= 4 else 0.87 if tp >= 2 else 0.88
    config = EngineConfig(SGLANG_MAX_REQUESTS, chunk, 1, True, "reserve", prefill_first=True,
                          kv_memory_fraction=static, memory_of_total=True)  # fmt: skip
    try:
        pool = kv_pool(shape, layout, cluster, config).tokens
    except EngineError:  # nothing fits: the simulation says so with the flags to change
        return config
    return replace(config, max_num_seqs=max(1, min(pool // 2, SGLANG_MAX_REQUESTS)))


def _trtllm(shape: TransformerShape, layout: ServingLayout, gpu: GPU, isl: int, osl: int,
            mode: str, longest: int) -> EngineConfig:  # fmt: skip
    batch, tokens = bench_settings(shape, layout, gpu.memory_gib, isl, osl)
    fraction = KV_FRACTION if mode == "offline" else 0.9
    # chunked attention reaches the kernels only when the longest sequence reaches the chunk;
    # then a GPU before Blackwell decodes those layers with masked MHA (module docstring)
    chunked = shape.chunked_layers and longest >= shape.attention_chunk
    per_head = shape.chunked_layers if chunked and gpu.fp4_tflops is None else 0
    return EngineConfig(batch, tokens, BLOCK, True, "reserve", kv_memory_fraction=fraction,
                        per_head_decode_layers=per_head)  # fmt: skip


def engine_settings(engine: str, version: str | None, *, shape: TransformerShape,
                    layout: ServingLayout, cluster: LLMCluster, mode: str = "server",
                    prompt_len: int = 1, output_len: int = 1, longest: int = 2,
                    overrides: dict[str, Any] | None = None) -> EngineSettings:  # fmt: skip
    """The preset of ``engine`` (module docstring) for this deployment and workload, with the
    user's ``overrides`` (EngineConfig field -> value; ``None`` values are ignored) on top.
    ``prompt_len``/``output_len``: the mean lengths (trtllm-bench's heuristic), ``longest``: the
    longest request (vLLM V0's budget)."""
    version = check_engine(engine, version)
    gpu = cluster.gpu
    if engine == "vllm":
        config = _vllm(version, gpu, mode, longest)
    elif engine == "sglang":
        config = _sglang(shape, layout, cluster)
    else:
        config = _trtllm(shape, layout, gpu, max(1, prompt_len), max(1, output_len), mode,
                         max(longest, prompt_len + output_len))  # fmt: skip
    given = {k: v for k, v in (overrides or {}).items() if v is not None}
    if given:
        config = replace(config, **given)
    if config.cuda_graph_max_tokens and "cuda_graph_max_tokens" not in given:
        # vLLM sizes its capture list from the max_num_seqs it runs with (module docstring)
        config = replace(config, cuda_graph_max_tokens=min(2 * config.max_num_seqs,
                                                           VLLM_MAX_CAPTURE))  # fmt: skip
    return EngineSettings(engine, version, config, layout.cuda_graphs, layout.custom_allreduce,
                          layout.kv_precision, SOURCES[engine], tuple(sorted(given)))  # fmt: skip
