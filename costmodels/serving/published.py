"""Published serving latencies the model is checked against (never fitted on).

NVIDIA NeMo Framework user guide, "Llama-2 Results / Inference Performance"
(docs.nvidia.com/nemo-framework/user-guide/latest/performance/llama.html), configuration 1
("Chatbot Conversation use case": batch 1-8, 128 input and 20 output tokens), "Average Latency
[ms]" of Llama-2-7B at batch size 1, PP = 1, TP = GPUs, on A100 80GB SXM4 and H100 80GB HBM3
(NeMo's inference path runs TensorRT-LLM). The table does not state the precision; we predict
16-bit weights and cache. The same table's Llama-2-13B rows come out faster than its 7B rows on
one GPU, which a user questioned in NVIDIA/NeMo discussion #8455; we compare the 7B rows only.

No published decode measurement of a 70B-class model at TP 8 on H100 with a fully stated
configuration (precision, input and output lengths, batch) was found in the sources searched,
so that case has no comparison here.
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.hardware import get_gpu
from costmodels.llm.intra_link import gpu_intra_link
from costmodels.llm.presets import preset_shape
from costmodels.llm.shapes import LLMCluster
from costmodels.serving.layout import ServingLayout
from costmodels.serving.predict import predict_serving

SOURCE = (
    "NVIDIA NeMo Framework user guide, Llama-2 inference performance, configuration 1 "
    "(128 input / 20 output tokens, batch 1)"
)
PROMPT, OUTPUT = 128, 20
# (GPU preset, TP) -> average latency of one request, ms
NEMO_LLAMA2_7B_MS: dict[tuple[str, int], float] = {
    ("A100 80GB SXM", 1): 234.0, ("A100 80GB SXM", 2): 171.7, ("A100 80GB SXM", 4): 143.7,
    ("A100 80GB SXM", 8): 136.5, ("H100 SXM", 1): 153.8, ("H100 SXM", 2): 128.6,
    ("H100 SXM", 4): 107.4, ("H100 SXM", 8): 97.6,
}  # fmt: skip


@dataclass(frozen=True)
class Comparison:
    gpu: str
    tp: int
    measured_ms: float
    predicted_ms: float
    tpot_ms: float

    @property
    def error(self) -> float:
        return self.predicted_ms / self.measured_ms - 1.0


def nemo_comparisons() -> list[Comparison]:
    """Predicted request latency (first token from the prefill, then 19 decode steps) per row."""
    out = []
    for (gpu_name, tp), measured in NEMO_LLAMA2_7B_MS.items():
        gpu = get_gpu(gpu_name)
        link = gpu_intra_link(gpu)
        cluster = LLMCluster(gpu, 8, link.bandwidth_Bps, 25e9, intra_latency_s=link.latency_s)
        p = predict_serving(preset_shape("Llama 2 7B", PROMPT + OUTPUT), ServingLayout(tp=tp),
                            cluster, batch=1, prompt_len=PROMPT, output_len=OUTPUT)  # fmt: skip
        predicted = (p.ttft_s + (OUTPUT - 1) * p.tpot_s) * 1e3
        out.append(Comparison(gpu_name, tp, measured, predicted, p.tpot_s * 1e3))
    return out
