"""Power caps (``--power-cap WATTS``): how much a board power limit below the TDP slows the
tensor-core kernels.

A GPU running dense GEMMs draws its full board power at its rated clocks (the measured matmul
ceilings of costmodels/llm/gemm.py were taken at the TDP). Below it the firmware lowers the
clock until the power fits. With dynamic power proportional to f V^2 and the voltage scaling
with the frequency in the DVFS range, P(f) = P_static + (TDP - P_static) f^3, so under a cap

    clock = ((cap - P_static) / (TDP - P_static)) ** (1/3)      (1 at the TDP)

with P_static = ``STATIC_SHARE`` x TDP (leakage and the always-on parts). STATIC_SHARE is an
ESTIMATE (0.2; Ujeniya et al., "Architectural Trade-offs in the Energy-Efficient Era: power-
capping NVIDIA H100 and H200", arXiv:2604.11391, measure DGEMM throughput falling with the SM
clock under caps from 200 to 700 W, but we found no stored table of their numbers). An H100 SXM
at 500 W (torchtitan's Grand Teton runs) comes out at 0.86 of its 700 W tensor rate.
Memory-bound kernels keep their HBM rate (the memory clock is not lowered by the cap).

TDPs (board power of the SXM / OAM part):
- A100 SXM 400 W, H100 SXM 700 W, H200 SXM 700 W: lzwjava.github.io 'NVIDIA H200 GPU
  Specifications' (H100 and H200 700 W), technolynx 'Power, Thermals' ("the NVIDIA A100 SXM has a
  default TDP of 400W; the H100 SXM is rated at 700W");
- H100 SXM 96GB: the same SXM5 board (700 W TDP; torchtitan: "We used the default 500W power
  limit, although tuning it up to 700W TDP ...", pytorch/torchtitan benchmarks/
  asyncTP_llama3_h100_2025-06_torchtitan.md);
- H20 400 W: willitrunai.com H20 page and huggingface.co/hardware/h20 ("Power 400W");
- B200 1,000 W, GB200 1,200 W: glennklockwood.com B200 (HGX B200 at 1,000 W, GB200 at 1,200 W);
- B300 1,100 W, GB300 1,400 W: verda.com 'NVIDIA GB300 NVL72' per-GPU table ("Max Thermal
  Design Power (TDP)": GB300 1.4 kW, B300 1.1 kW); glennklockwood.com B300: "1400 W maximum";
- MI300X 750 W, MI325X 1,000 W: yobitel.com MI325X page (MI325X ~1,000 W, MI300X 750 W).
- MI355X 1,400 W: tomshardware.com 'AMD's Instinct MI355X accelerator will consume 1,400 watts'.
The H800 and GH200 are left without a TDP here (the H800's is not in a stored source; the
GH200's 1,000 W module figure includes its Grace CPU), so a cap on them is refused; so is a cap
above the TDP (``--power-cap 1e9``), which would change nothing.
"""

from __future__ import annotations

TDP_W: dict[str, float] = {
    "A100 40GB SXM": 400.0,
    "A100 80GB SXM": 400.0,
    "H100 SXM": 700.0,
    "H100 SXM 96GB": 700.0,
    "H200 SXM": 700.0,
    "H20": 400.0,
    "B200": 1000.0,
    "GB200": 1200.0,
    "B300": 1100.0,
    "GB300": 1400.0,
    "MI300X": 750.0,
    "MI325X": 1000.0,
    "MI355X": 1400.0,
}
STATIC_SHARE = 0.2  # ESTIMATE (module docstring)


def clock_factor(gpu_name: str, cap_w: float | None) -> float:
    """The tensor-core clock of a GPU under a board power cap, relative to its TDP clock."""
    if cap_w is None:
        return 1.0
    if gpu_name not in TDP_W:
        raise ValueError(f"--power-cap: no TDP is known for the {gpu_name} (known: "
                         f"{', '.join(TDP_W)})")  # fmt: skip
    tdp = TDP_W[gpu_name]
    static = STATIC_SHARE * tdp
    if not cap_w > static:
        raise ValueError(f"--power-cap {cap_w:g} W is at or below the {gpu_name}'s static power "
                         f"(~{static:g} W of its {tdp:g} W TDP): it would not run")  # fmt: skip
    if cap_w > tdp:  # the board never draws more than its TDP: such a cap would change nothing
        raise ValueError(f"--power-cap {cap_w:g} W is above the {gpu_name}'s {tdp:g} W TDP, "
                         "which it never exceeds: give a cap up to the TDP or leave it "
                         "out")  # fmt: skip
    if cap_w == tdp:
        return 1.0
    return float(((cap_w - static) / (tdp - static)) ** (1.0 / 3.0))
