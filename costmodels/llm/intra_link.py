"""The intra-node link a GPU comes with: its NVLink (or Infinity Fabric), else PCIe x16.

``predict-llm``/``plan-llm`` without ``--intra`` and the app's "Follows the GPU" link use this, so
both price the same link for the same GPU (issue 16: the intra-node link follows the chosen GPU
instead of a fixed 300 GB/s).

A GPU on an NVLink fabric the NCCL model describes (costmodels.nccl.fabrics: A100, H100, H200,
B200, GB200, V100) gets that fabric's per-GPU bandwidth as NCCL's topology code counts it
(NVLinks x a per-link figure: A100 12 x 20 = 240 GB/s, H100 18 x 20.6 = 370.8 GB/s), the same
number the NCCL collectives start from. Otherwise (MI300X's Infinity Fabric):
bandwidth per GPU and per direction = nominal x achievable fraction, with the nominal rate
``GPU.nvlink_Bps`` (costmodels.hardware.gpus, half the vendor's bidirectional figure) and the
fraction and latency of the project's NVLink presets (costmodels.hardware.links: 0.8 and 2 us,
both marked there as estimates); a GPU with no fabric gets the PCIe 4.0 x16 preset (PCIe 5.0 for
Hopper-or-newer parts with fp8 tensor cores: H100 PCIe is a Gen5 board). A100 80GB SXM:
300 GB/s x 0.8 = 240 GB/s, 2 us.
"""

from __future__ import annotations

from dataclasses import dataclass

from costmodels.hardware import GPU, get_link
from costmodels.llm.gpu_arch import gpu_arch
from costmodels.nccl.fabrics import NotModelledError, fabric_for_gpu

NVLINK_PRESET = "NVLink 3 (A100)"  # whose achievable fraction and latency every NVLink shares


@dataclass(frozen=True)
class IntraLink:
    """One GPU's share of its node's fabric, per direction, and where the numbers come from."""

    bandwidth_Bps: float
    latency_s: float
    description: str


def _fabric_name(gpu_name: str) -> str:
    """What the GPU's own fabric is called (AMD Instinct: Infinity Fabric, xGMI links)."""
    return "Infinity Fabric (xGMI)" if gpu_arch(gpu_name).startswith("cdna") else "NVLink/fabric"


def gpu_intra_link(gpu: GPU) -> IntraLink:
    """The link ``gpu`` is sold with (see the module docstring)."""
    try:
        fabric = fabric_for_gpu(gpu.name)
    except NotModelledError:
        fabric = None
    if fabric is not None and fabric.kind in ("nvswitch", "nvlink-mesh"):
        latency = get_link(NVLINK_PRESET).latency_s
        return IntraLink(
            fabric.bus_Bps_per_gpu,
            latency,
            f"{gpu.name}: {fabric.name}, {fabric.bus_Bps_per_gpu / 1e9:.4g} GB/s per GPU and "
            f"direction as NCCL's topology counts it (costmodels.nccl.fabrics), "
            f"{latency * 1e6:g} us",
        )
    nominal = getattr(gpu, "nvlink_Bps", None)
    if nominal:
        preset = get_link(NVLINK_PRESET)
        bandwidth = nominal * preset.achievable_fraction
        return IntraLink(
            bandwidth,
            preset.latency_s,
            f"{gpu.name} {_fabric_name(gpu.name)} {nominal / 1e9:g} GB/s per direction x "
            f"{preset.achievable_fraction:g} achievable = {bandwidth / 1e9:g} GB/s, "
            f"{preset.latency_s * 1e6:g} us",
        )
    link = get_link("pcie5" if getattr(gpu, "fp8_tflops", None) else "pcie4")
    bandwidth = 1.0 / link.beta_s_per_byte
    return IntraLink(
        bandwidth,
        link.latency_s,
        f"{gpu.name} has no GPU fabric: {link.name}, {link.bandwidth_Bps / 1e9:.3g} GB/s x "
        f"{link.achievable_fraction:g} achievable = {bandwidth / 1e9:.3g} GB/s, "
        f"{link.latency_s * 1e6:g} us",
    )
