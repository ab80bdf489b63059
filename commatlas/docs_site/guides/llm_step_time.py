"""Guide: where the time of one LLM training step goes (the operator model of issue 16).

Every number is computed at build time by ``costmodels.llm``: the kernels of one layer
(``layer_ops.layer_kernels``), their times (``kernel_time``), whole steps
(``step.predict_step``) and the fitted constants (``constants.default_constants``).
"""

from __future__ import annotations

import json

from commatlas.docs_site import Files
from commatlas.docs_site.guides import _common as c
from commatlas.docs_site.guides import llm_step_fsdp_memory as fm
from commatlas.docs_site.guides.llm_fp8_rowwise import rowwise_section
from commatlas.docs_site.guides.llm_step_engines import engines_section
from costmodels.hardware import get_gpu
from costmodels.llm.constants import DATA as CONSTANTS_FILE
from costmodels.llm.constants import (
    FITTED,
    FITTED_MEMORY,
    FITTED_PYTORCH,
    PYTORCH_DATA,
    default_constants,
)
from costmodels.llm.frameworks import get_kernel_set
from costmodels.llm.kernel_time import kernel_seconds, layer_times
from costmodels.llm.layer_ops import LayerShard, layer_kernels
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape
from costmodels.llm.step import BREAKDOWN_KEYS, StepPrediction, predict_step
from costmodels.validation.megatron_hopper_fit import NAMES as MEGATRON_HOPPER_NAMES
from taxonomy import Taxonomy

MODEL = "Llama 3.1 8B"
SEQ = 8192
GPU = "H100 SXM"
FRAMEWORKS = ("megatron", "pytorch", "pytorch-compile")
STEP_LAYOUT = Layout(tp=1, pp=1, dp=8, global_batch=32, zero=3, recompute="selective")


def shape() -> TransformerShape:
    return preset_shape(MODEL, SEQ)


def cluster() -> LLMCluster:
    gpu = get_gpu(GPU)
    return LLMCluster(gpu, 8, gpu.nvlink_Bps * 0.8, 25e9)  # the predict-llm defaults


def shard() -> LayerShard:
    return LayerShard(1, SEQ, SEQ, 1, False)


def kernel_rows() -> list[list[str]]:
    """One layer's forward kernels (Megatron-Core + TE, bf16, one micro-batch of one sequence)."""
    gpu, constants = get_gpu(GPU), default_constants()
    kernels = layer_kernels(shape(), shard(), "bf16", get_kernel_set("megatron"))
    rows = []
    for k in kernels.forward:
        seconds = kernel_seconds(k, gpu, constants)
        rows.append([k.name, k.category, f"{k.flops / 1e9:.1f}", f"{k.bytes / 1e6:.1f}",
                     f"{seconds * 1e6:.0f}"])  # fmt: skip
    return rows


def hand_gemm_flops() -> float:
    """2 T (h (h + 2 kv d) + h h + 3 h f): the four linear layers of a Llama layer, by hand."""
    s = shape()
    d = s.hidden // s.heads
    h, f, kv = s.hidden, s.ffn_size, s.kv_head_count
    return 2.0 * SEQ * (h * (h + 2 * kv * d) + h * h + 3 * h * f)


def layer_rows() -> list[list[str]]:
    """Forward + backward of one layer by bucket, per framework and precision (ms)."""
    gpu, constants = get_gpu(GPU), default_constants()
    rows = []
    for framework in FRAMEWORKS:
        for precision in ("bf16", "fp8"):
            t = layer_times(shape(), shard(), gpu, precision, framework, constants, None)
            both = t.forward + t.backward
            rows.append([framework, precision, c.format_ms(both.gemm), c.format_ms(both.attention),
                         c.format_ms(both.memory_bound), c.format_ms(both.idle),
                         c.format_ms(both.total)])  # fmt: skip
    return rows


def steps() -> dict[tuple[str, str], StepPrediction]:
    return {(f, p): predict_step(shape(), STEP_LAYOUT, cluster(), precision=p, framework=f)
            for f in FRAMEWORKS for p in ("bf16", "fp8")}  # fmt: skip


def step_rows() -> list[list[str]]:
    rows = []
    for (framework, precision), step in steps().items():
        parts = step.compute_breakdown_s
        rows.append([framework, precision, *(f"{parts[k]:.3g}" for k in BREAKDOWN_KEYS),
                     f"{step.iteration_time_s:.3g}", f"{step.tokens_per_s_per_gpu:.0f}",
                     f"{step.model_flops_utilization:.0%}"])  # fmt: skip
    return rows


def constant_rows() -> list[list[str]]:
    hopper = json.loads(PYTORCH_DATA.read_text())
    constants = default_constants()
    a100 = "vTrain dev rows with row_in_source // 2 even and Narayanan Table 1"
    pytorch = "torchtitan vanilla-TP rows, nanotron TP 2/8/32 (fit split of dev_runs.py)"
    rows = [[name, f"{getattr(constants, name):.4g}", a100] for name in FITTED]
    rows += [[name, f"{getattr(constants, name):.4g}", pytorch] for name in FITTED_PYTORCH]
    rows += [[name, f"{getattr(constants, name):.4g}", hopper["fitted_on"]["memory"]]
             for name in FITTED_MEMORY]  # fmt: skip
    dgxc = "DGX Cloud Megatron-Core H100 rows, every other one (megatron_hopper_fit.py)"
    rows += [[name, f"{getattr(constants, name):.4g}", dgxc] for name in MEGATRON_HOPPER_NAMES]
    return rows


def page_text(tax: Taxonomy) -> str:
    s = shape()
    gemm_fwd = sum(k.flops for k in layer_kernels(s, shard(), "bf16", get_kernel_set(
        "megatron")).forward if k.category == "gemm")  # fmt: skip
    record = json.loads(CONSTANTS_FILE.read_text())
    errors = record["errors_percent"]
    eager, compiled = steps()["pytorch", "bf16"], steps()["pytorch-compile", "bf16"]
    bf16, fp8 = steps()["megatron", "bf16"], steps()["megatron", "fp8"]
    lines = [
        "# Where the time of an LLM training step goes",
        "",
        "**The question.** A training step is more than its matrix multiplications: how long "
        "do the attention core, the norms, activations, rotary embeddings and the loss take, "
        "what does fusing them (or not) cost, and what does FP8 buy? CommAtlas answers with "
        "an operator model: every kernel of a transformer layer, forward and backward, timed "
        "from its FLOPs and HBM bytes on the GPU's datasheet peaks.",
        "",
        "## The kernels of one layer",
        "",
        f"{MODEL} ({s.layers} layers, hidden {s.hidden}, {s.heads} heads, {s.kv_head_count} "
        f"key-value heads, SwiGLU {s.ffn_size}) at {SEQ} tokens on one {GPU}, Megatron-Core "
        "with Transformer Engine, bf16. The forward pass of one layer for one sequence:",
        "",
        *c.table(["kernel", "bucket", "GFLOP", "MB moved", "µs"], kernel_rows()),
        f"The four GEMMs do {gemm_fwd / 1e9:.1f} GFLOP, the hand count "
        f"2 T (h (h + 2 kv d) + h² + 3 h f) = {hand_gemm_flops() / 1e9:.1f} GFLOP. A GEMM's time "
        "is its FLOPs at the dense tensor-core peak times the measured matmul ceiling "
        "(the best rate a shape search found on that GPU), discounted for tile and wave "
        "quantisation over the SMs; a flash-attention pass runs at the rate the flash-attention "
        "repository publishes for its implementation, mask, head width and sequence (A100 and "
        "H100; a published share of the peak elsewhere); every other kernel moves its bytes "
        "at the fitted share of HBM bandwidth; each launch adds a fixed GPU cost, and a phase "
        "whose kernels the host cannot issue fast enough leaves the GPU idle. The backward pass "
        "runs two GEMMs per forward GEMM, 2.5x the attention FLOPs and the element-wise "
        "gradients.",
        "",
        "## Fused or not, bf16 or FP8",
        "",
        "One layer, forward + backward, by bucket (ms). `megatron` fuses norms, SwiGLU and "
        "rotary into single kernels; `pytorch` (eager) runs RMSNorm and rotary as chains of "
        "element-wise ops; `pytorch-compile` fuses each region between two GEMMs into one "
        "kernel. FP8 runs the linear layers at the fp8 peak but adds cast-transpose and "
        "scaling kernels (Transformer Engine delayed scaling).",
        "",
        *c.table(
            ["framework", "precision", "GEMM", "attention", "memory-bound", "host idle", "total"],
            layer_rows(),
        ),  # fmt: skip
        "## One step",
        "",
        f"{STEP_LAYOUT.global_batch} sequences on 8 {GPU} GPUs with FSDP (ZeRO-3) and "
        "selective recomputation; `compute_breakdown_s` (seconds) sums to the step: the "
        "slowest stage's kernels, the optimizer, exposed communication, the pipeline bubble "
        "(fill and drain) and host_idle (the GPU waiting on the host).",
        "",
        *c.table(
            ["framework", "precision", *BREAKDOWN_KEYS, "step s", "tokens/s/GPU", "MFU"],
            step_rows(),
        ),  # fmt: skip
        f"Eager PyTorch takes {eager.iteration_time_s / compiled.iteration_time_s:.2f}x the "
        f"compiled step; FP8 cuts the Megatron step from {bf16.iteration_time_s:.3g} s to "
        f"{fp8.iteration_time_s:.3g} s, less than the 2x of its GEMM peak because attention, "
        "the element-wise kernels and the casts stay.",
        "",
        *fm.fsdp_section(),
        *engines_section(),
        *fm.memory_section(),
        "## The fitted constants",
        "",
        f"{len(FITTED) + len(FITTED_PYTORCH) + len(FITTED_MEMORY) + len(MEGATRON_HOPPER_NAMES)} "
        "constants are fitted "
        "(least squares on the log of predicted over measured time; the allocator reserve on "
        "reported memory) on dev data only; everything else is a datasheet number, a published "
        "measurement or a hand count. The Hopper / PyTorch ones leave the A100 ones untouched; "
        "`hopper_tensor_rate` is the share of the modelled tensor-core rate the PyTorch-native "
        "stacks sustained on Hopper in those runs. It is theirs, not the GPU's: Megatron-Core on "
        "Hopper (the DGX Cloud dev runs) reached 62 % MFU where those stacks reached 46 %, so "
        "Megatron kernels on Hopper have their own rate (`megatron_hopper_tensor_rate`, fitted "
        "on every other DGX Cloud run; the leave-one-source-out refits of "
        "`benchmarks/llm_loso.py` fit it only where they hold such runs). "
        "`fp8_cast_efficiency` is likewise torchao's; Transformer Engine's casts may have their "
        "own share (`te_fp8_cast_efficiency`, 0 = torchao's, fitted only by the leave-one-source-"
        "out refits: shipped, fitted on DGX Cloud it made llm-foundry's fp8 / bf16 step ratio "
        "worse, so it stays torchao's):",
        "",
        *c.table(["constant", "value", "fitted on"], constant_rows()),
        f"On the vTrain single-node rows the model is within {errors['vtrain_all_mape']:.1f} % "
        f"on average ({errors['vtrain_held_out_mape']:.1f} % on the half it was not fitted "
        f"on); on Megatron-LM's published table within {errors['narayanan_mape']:.1f} % "
        "([validation](../validation-llm.md)).",
        "",
        "## Models and systems of 2025-26",
        "",
        "Presets `Qwen3 32B`, `Qwen3 30B-A3B`, `Qwen3 235B-A22B` (head width 128, q/k norms), "
        "`GPT-OSS 20B` / `120B` (SwiGLU experts with biases), `Kimi K2` (DeepSeek-V3's MLA, "
        "384 experts), `Llama 4 Scout` / `Maverick` and `Nemotron-4 15B` / `340B` (squared ReLU); "
        "`--hf-config` reads the same families (qwen3, qwen3_moe, gpt_oss, kimi_k2, "
        "llama4, nemotron). `--head-dim`, `--mlp swiglu|gelu|relu2` and `--position "
        "rope|learned` state what `--gated-mlp` bundles. GPT-OSS's alternate layers score "
        "only their 128-token window (FLOPs and flash kernels). What the model prices only "
        "approximately (GPT-OSS's attention sinks; Llama 4's chunked attention beyond 8,192 "
        "tokens) is printed after the "
        "model's name as `APPROXIMATION: ...`. Hybrid Mamba-2 models: presets `Nemotron-H 8B` "
        "/ `47B` / `56B`, `Nemotron 3 Nano 30B-A3B` and `Nemotron 3 Super 120B-A12B`, and "
        "`--hf-config` of `nemotron_h` (its `hybrid_override_pattern`: M Mamba-2, * attention, "
        "- MLP, E MoE, one mixer per layer). Nemotron 3 Super's LatentMoE (`moe_latent_size`): "
        "each token is projected from the hidden width to a 1,024-wide latent (a weight every "
        "TP rank holds whole), dispatched and run through the routed experts at that width and "
        "projected back after the combine; the shared expert keeps the full width (120.7B "
        "parameters, 12.8B active with the embeddings: the published 120B / A12B). "
        "A Mamba-2 layer is priced as its own kernels: the in_proj (z, x, B, C, dt) "
        "and out_proj GEMMs, the causal conv1d, the SSD chunked scan as its batched products "
        "(2 Q N G + 2 Q P H + 4 N P H FLOPs per token for chunk Q, state N, G groups, H heads "
        "of P; Dao & Gu, arXiv:2405.21060) and the gated norm; its activations and no KV "
        "cache; under TP its heads and groups split (one all-reduce per layer, as for an "
        "attention or MLP layer); context parallelism of Mamba layers is refused. Nemotron-H "
        "8B counts 8,100,852,736 parameters, as its checkpoint. A pure Mamba or Jamba config is "
        "refused in one line naming what is missing. GPUs `b300` and `gb300` and clusters "
        "`dgx-b200`, `dgx-b300`, `gb300-nvl72` (800 Gb/s ConnectX-8 per GPU) are presets "
        "(`commatlas clusters` lists the sources); `--gpu mi300x`, `mi325x` (CDNA 3) and "
        "`mi355x` (CDNA 4) are taken by every command that takes `--gpu`.",
        "",
        "Precisions: `--fp8-recipe fp8-cs` is Transformer Engine's current scaling (per-tensor "
        "scales from each tensor's own amax: an extra read per cast, the norm cannot cast), "
        "`--fp8-recipe mxfp8` its MXFP8 block scaling (an E8M0 scale per 32 values, row- and "
        "column-wise copies, Blackwell only) and `--precision fp4` NVFP4 training "
        "(arXiv:2509.25149: fprop, dgrad and wgrad of the linear layers in FP4 at the GPU's "
        "dense FP4 rate, 16-value E4M3 and per-tensor FP32 scales, attention and the output "
        "layer in BF16; Blackwell only). The prediction prints what each runs in and what it "
        "leaves out (NVFP4's BF16 last layers).",
        "",
        "Layout words: `--moe-dispatcher alltoall` prices the flat expert all-to-all, "
        "`deepep` DeepEP's normal kernels (a token crosses the network once per target node, "
        "then NVLink), `hybridep` the same form at NVIDIA HybridEP's published rates (its B200 "
        "node fixes the NVLink share and the fp8 dispatch time, its GB200 NVL72 and H100 rows "
        "check them: `benchmarks/moe_dispatch_accuracy.py`); `--cuda-graphs` "
        "drops the host's per-kernel launch time (each layer replays a captured graph). Both "
        "are accepted by predict-llm and plan-llm. `--first-stage-layers N` / "
        "`--last-stage-layers N` put N layers on the first / last pipeline stage as Megatron's "
        "`--decoder-first/last-pipeline-num-layers` do (the other stages share the rest "
        "equally), also with `--interleave` when every stage's count divides by it (Qwen3 "
        "235B-A22B's 94 layers on PP 8 VP 2: 10 + 6 x 12 + 12); plan-llm applies them to every "
        "pipeline depth where they split. `--etp N` is Megatron's expert tensor-parallel "
        "size: the ep x etp expert ranks are carved from tp x cp x dp, so EP may span the TP "
        "group (`--tp 4 --dp 8 --ep 32 --etp 1`: whole experts, each rank its "
        "sequence-parallel share of the tokens); plan-llm's `--etp 0,1` searches it. With "
        "Megatron's all-to-all dispatcher and etp = tp, a MoE layer's TP all-gather and "
        "reduce-scatter carry the dispatched top_k copies of its tokens, exposed (the expert "
        "linears overlap nothing), and a GPU holding several experts regroups the received "
        "tokens by expert and back (a copy each way).",
        "",
        *rowwise_section(shape(), STEP_LAYOUT, cluster()),
        "## Calibrating on your own step",
        "",
        "One measured step identifies one factor: `--measured-step SECONDS` fits `gemm_scale` "
        "when GEMMs and attention dominate that step, `overhead_scale` when the memory-bound "
        "kernels and host overheads do (and slows the links by it when above 1), and predicts "
        "the other layouts with it. Only the share of the measured error that is the model's "
        "bias on your cluster carries, not its error on that one layout: an empirical-Bayes "
        "weight estimated on the dev data (small where the model's per-layout scatter is "
        "large, as on vTrain's Megatron kernels; about a half on torchtitan's compiled ones; "
        "near one for an error far beyond the dev spread; see the guide Calibrate from what "
        "you measure). A measured "
        "operator table (`scripts/profile_operators.py` on the GPU) replaces the modelled "
        "kernel rates altogether.",
        "",
        *c.reproduce(reproduce_lines()),
    ]
    return "\n".join(lines)


def reproduce_lines() -> list[str]:
    return [
        "- The step table, one row: `commatlas predict-llm --model llama3-8b --seq-len 8192 "
        "--global-batch 32 --gpu h100 --tp 1 --pp 1 --dp 8 --zero 3 --recompute selective "
        "--precision fp8 --framework megatron --json`.",
        "- In Python: `costmodels.llm.layer_ops.layer_kernels` lists a layer's kernels, "
        "`costmodels.llm.step.predict_step(shape, layout, cluster, precision=..., "
        "framework=...)` prices a step.",
        *fm.reproduce_lines(),
        "- The constants: `python benchmarks/llm_step_fit.py` (`--family pytorch` for the "
        "Hopper / PyTorch ones); the accuracy figures and error bands: "
        "`python benchmarks/llm_step_accuracy.py`.",
    ]


def files(tax: Taxonomy) -> Files:
    return {"generated/guides/llm-step-time.md": page_text(tax)}
