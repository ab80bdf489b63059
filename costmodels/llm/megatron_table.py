"""Megatron-LM's published weak-scaling runs (Narayanan et al., SC'21, Table 1) and a validation.

Source: D. Narayanan, M. Shoeybi, J. Casper, P. LeGresley, M. Patwary, V. Korthikanti,
D. Vainbrand, P. Kashinkunti, J. Bernauer, B. Catanzaro, A. Phanishayee, M. Zaharia,
"Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC'21,
arXiv:2104.04473. Every number below was read in a full-text transcription of the arXiv paper
(§5, §5.1, Table 1, Eq. 2-3) found with the project's search tool, and cross-checked against two
independent reading notes of the paper that reproduce all ten rows identically, and against the
summary in github.com/bzhng-development/summary-of-some-paper-in-cuda (1T row: 163 TFLOP/s,
52 %, 502 PFLOP/s; 175B-class row: 148 TFLOP/s, 47 %). All ten rows were verified.

Setting stated in the paper (§5): Selene, 8 x A100 80 GB per node joined by NVLink/NVSwitch,
eight 200 Gb/s HDR InfiniBand HCAs per node for application traffic, mixed precision, A100 peak
312 TFLOP/s; §5.1: interleaved pipeline schedule with scatter/gather, V = 51,200, s = 2048.
The paper's throughput is Eq. 3, F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) FLOPs per iteration
(GEMMs only, counting the extra forward pass of activation recomputation), divided by the
measured iteration time and the GPU count.

What Table 1 does not give, and what we therefore fix for every row (nothing is tuned per row):
micro-batch size 1 (the PTD-P rows of the paper's Table 2 use micro-batch 1), full activation
recomputation (Eq. 3 assumes it), no ZeRO (PTD-P does not use it; ZeRO-3 is compared separately
in §5.2), no sequence parallelism (Korthikanti et al. 2022 postdates the paper), and the
interleave factor chosen by ``interleave_rule`` below, fp16 and the paper's kernels
(``megatron-legacy``, costmodels/llm/frameworks.py). The ten rows are dev data of the operator
model's constants (benchmarks/llm_step_fit.py fits on them with the vTrain rows); the mean
absolute error with the shipped constants is in benchmarks/llm_step_accuracy.py (6.6 % when
written; 13.9 % before the operator model).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from costmodels.hardware import get_gpu, get_link
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.shapes import Layout, LLMCluster, TransformerShape

if TYPE_CHECKING:
    from costmodels.llm.constants import StepConstants
    from costmodels.llm.step import StepPrediction

SEQ_LEN = 2048  # §5.1
VOCAB = 51200  # §5.1
A100_PEAK_FLOPS = 312e12  # §5: "peak device throughput of an A100 GPU with 16-bit precision"
PRECISION = "fp16"  # §5 "mixed precision"; Megatron-LM's 2021 default half type
FRAMEWORK = "megatron-legacy"


@dataclass(frozen=True)
class MegatronRun:
    """One row of Table 1 (params in billions as printed; throughput in TFLOP/s per GPU)."""

    params_billion: float
    heads: int
    hidden: int
    layers: int
    tp: int
    pp: int
    gpus: int
    global_batch: int
    tflops_per_gpu: float
    percent_of_peak: float
    aggregate_pflops: float

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    @property
    def shape(self) -> TransformerShape:
        return TransformerShape(self.layers, self.hidden, self.heads, SEQ_LEN, vocab=VOCAB)


# fmt: off
TABLE_1: tuple[MegatronRun, ...] = (
    MegatronRun(1.7, 24, 2304, 24, 1, 1, 32, 512, 137, 44, 4.4),
    MegatronRun(3.6, 32, 3072, 30, 2, 1, 64, 512, 138, 44, 8.8),
    MegatronRun(7.5, 32, 4096, 36, 4, 1, 128, 512, 142, 46, 18.2),
    MegatronRun(18.4, 48, 6144, 40, 8, 1, 256, 1024, 135, 43, 34.6),
    MegatronRun(39.1, 64, 8192, 48, 8, 2, 512, 1536, 138, 44, 70.8),
    MegatronRun(76.1, 80, 10240, 60, 8, 4, 1024, 1792, 140, 45, 143.8),
    MegatronRun(145.6, 96, 12288, 80, 8, 8, 1536, 2304, 148, 47, 227.1),
    MegatronRun(310.1, 128, 16384, 96, 8, 16, 1920, 2160, 155, 50, 297.4),
    MegatronRun(529.6, 128, 20480, 105, 8, 35, 2520, 2520, 163, 52, 410.2),
    MegatronRun(1008.0, 160, 25600, 128, 8, 64, 3072, 3072, 163, 52, 502.0),
)
# fmt: on


def paper_parameter_count(
    layers: int, hidden: int, vocab: int = VOCAB, seq: int = SEQ_LEN
) -> float:
    """Eq. 2 of the paper: P = 12 l h^2 (1 + 13/(12h) + (V + s)/(12 l h))."""
    n_layers, h = layers, hidden
    return 12 * n_layers * h**2 * (1 + 13 / (12 * h) + (vocab + seq) / (12 * n_layers * h))


def paper_flops_per_iteration(run: MegatronRun) -> float:
    """Eq. 3 of the paper: F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)), with recomputation."""
    b, s, n_layers, h = run.global_batch, SEQ_LEN, run.layers, run.hidden
    return 96 * b * s * n_layers * h**2 * (1 + s / (6 * h) + VOCAB / (16 * n_layers * h))


def selene_cluster() -> LLMCluster:
    """The paper's node (§5): 8 x A100 80 GB on NVLink 3 / NVSwitch, eight 200 Gb/s HDR HCAs.

    Intra: the per-GPU bandwidth NCCL's topology code gives A100's NVLink 3 (12 links x 20 GB/s =
    240 GB/s per direction; costmodels.nccl.fabrics), which is what the step model's NCCL
    collectives start from (the vendor figure is 300 GB/s per direction: 12 x 50 GB/s
    bidirectional, nvidia.com/de-de/data-center/nvlink). Inter: one HCA per GPU (paper §5),
    200 Gbit/s = 25 GB/s nominal x the HDR preset's achievable fraction (0.9, an estimate in
    costmodels.hardware.links) = 22.5 GB/s per GPU per direction.
    """
    gpu = get_gpu("a100-80gb")
    return LLMCluster(
        gpu=gpu,
        gpus_per_node=8,
        intra_bandwidth_Bps=gpu_intra_link(gpu).bandwidth_Bps,
        inter_bandwidth_Bps=1.0 / get_link("hdr").beta_s_per_byte,
    )


def _layout(run: MegatronRun, v: int) -> Layout:
    return Layout(
        tp=run.tp, pp=run.pp, dp=run.dp, global_batch=run.global_batch, micro_batch=1,
        interleave=v, recompute="full", schedule="interleaved" if v > 1 else "1f1b",
    )  # fmt: skip


def predict_run(
    run: MegatronRun, layout: Layout, cluster: LLMCluster, constants: StepConstants | None = None
) -> StepPrediction:
    """One row's step with the paper's kernels: Megatron-LM 2021 (``megatron-legacy``: fused
    bias-GeLU, bias-dropout-add and scale-mask-softmax, §4.2, no flash attention), fp16."""
    from costmodels.llm.step import predict_step

    return predict_step(run.shape, layout, cluster, precision=PRECISION, framework=FRAMEWORK,
                        constants=constants)  # fmt: skip


def interleave_rule(
    run: MegatronRun, cluster: LLMCluster | None = None, constants: StepConstants | None = None
) -> int:
    """Virtual stages per GPU. The paper runs Table 1 with the interleaved schedule (§5.1) but
    does not give v, so one rule serves every row: the valid v (a divisor of the layers per
    stage; m a multiple of pp, §2.2.2) that this model predicts fastest, i.e. what
    ``plan-llm`` would pick. The choice never looks at the published throughput."""
    cluster = cluster or selene_cluster()
    m = run.global_batch // run.dp  # micro-batch size 1
    valid = [
        v
        for v in range(1, run.layers // run.pp + 1)
        if (run.layers // run.pp) % v == 0 and (v == 1 or (run.pp > 1 and m % run.pp == 0))
    ]
    times = {
        v: predict_run(run, _layout(run, v), cluster, constants).iteration_time_s for v in valid
    }
    return min(valid, key=lambda v: (times[v], v))


def layout_for(
    run: MegatronRun, cluster: LLMCluster | None = None, constants: StepConstants | None = None
) -> Layout:
    """The layout of one row under the fixed assumptions in the module docstring."""
    return _layout(run, interleave_rule(run, cluster, constants))


def measured_iteration_s(run: MegatronRun) -> float:
    """The iteration time the paper's throughput implies: Eq. 3 FLOPs / (n x TFLOP/s)."""
    return paper_flops_per_iteration(run) / (run.gpus * run.tflops_per_gpu * 1e12)


@dataclass(frozen=True)
class ValidationRow:
    run: MegatronRun
    published_tflops: float
    predicted_tflops: float
    predicted_iteration_s: float

    @property
    def error(self) -> float:
        """Relative error of the predicted per-GPU TFLOP/s (predicted / published - 1)."""
        return self.predicted_tflops / self.published_tflops - 1


def validate_megatron(constants: StepConstants | None = None) -> tuple[list[ValidationRow], float]:
    """Predict every Table 1 row; return the rows and the mean absolute relative error.

    Predicted TFLOP/s per GPU uses the paper's own metric: Eq. 3 FLOPs / (n x predicted time),
    so the comparison tests only the predicted iteration time.
    """
    cluster = selene_cluster()
    rows = []
    for run in TABLE_1:
        step = predict_run(run, layout_for(run, cluster, constants), cluster, constants)
        predicted = paper_flops_per_iteration(run) / (run.gpus * step.iteration_time_s) / 1e12
        rows.append(ValidationRow(run, run.tflops_per_gpu, predicted, step.iteration_time_s))
    mean_abs = sum(abs(r.error) for r in rows) / len(rows)
    return rows, mean_abs
