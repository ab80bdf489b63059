"""Published failure and storage figures behind the goodput model's defaults, each with its source.

Llama 3 (Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783, 2024, its
section on reliability and its table of interruption root causes): during a 54-day snapshot of
Llama 3 405B pre-training on 16,384 H100 GPUs the job was interrupted 466 times, 47 of them
planned (automated maintenance) and 419 unexpected, and the team kept more than 90 % effective
training time. The same report gives the storage behind the run: Meta's Tectonic file system,
240 PB on 7,500 SSD servers, 2 TB/s sustained and 7 TB/s peak throughput, and checkpoints of
1 MB to 4 GB per GPU. (The interruption counts were checked against several accounts of the
report, the storage figures against two summaries of it, the 2 TB/s sustained figure in one of
them; the arXiv text itself was not reachable from here.)

The per-GPU failure rate is derived, not published: 419 unexpected interruptions over 54 days x
16,384 GPUs, i.e. one per 2,112 GPU-days (5.8 years of one GPU), assuming failures strike every
GPU alike and independently (a Poisson process per GPU). The job's mean time between failures is
then that over the GPU count: 54 days / 419 = 3.09 hours at 16,384 GPUs, the "one failure every
three hours" reported. Planned interruptions are left out: a job can checkpoint before them.

Estimates (no published figure found; each says why):

- restart time, 10 min: the restart cost of Daly's worked examples (J. T. Daly, Future Generation
  Computer Systems 22(3), 2006, Figs. 3-5: M = 24 h, 6 h, 15 min with R = 10 min, delta = 5 min);
  it stands for detection, rescheduling and re-initialisation, and excludes reading the
  checkpoint, which the model adds from the checkpoint's size and the read bandwidth;
- storage bandwidth of one node, 50 GB/s: two 200 Gbit/s front-end NICs per node;
- GPU-to-host copy, the PCIe link's theoretical rate per direction (PCI-SIG signalling rates:
  8, 16 and 32 GT/s per lane for PCIe 3.0, 4.0 and 5.0, 128b/130b encoding, x16): an upper bound
  on a pinned device-to-host copy; GPUs whose host link we could not confirm get PCIe 5.0.
"""

from __future__ import annotations

from dataclasses import dataclass

DAY_S = 86_400.0


@dataclass(frozen=True)
class FailureStudy:
    """Interruptions one published training run reported."""

    name: str
    gpus: int
    days: float
    unexpected: int
    planned: int
    source: str

    @property
    def job_mtbf_s(self) -> float:
        """Mean time between unexpected interruptions of the whole job, in seconds."""
        return self.days * DAY_S / self.unexpected

    @property
    def gpu_mtbf_s(self) -> float:
        """Mean time between failures of one GPU, if every GPU fails alike and independently."""
        return self.job_mtbf_s * self.gpus


LLAMA3_405B = FailureStudy(
    name="Llama 3 405B pre-training",
    gpus=16_384,
    days=54.0,
    unexpected=419,
    planned=47,
    source='Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783, 2024, '
    "reliability section (466 interruptions in 54 days on 16,384 H100s, 419 unexpected)",
)

#: Meta's Tectonic file system behind Llama 3: sustained (and peak) throughput, bytes per second.
LLAMA3_STORAGE_SUSTAINED_BPS = 2e12
LLAMA3_STORAGE_PEAK_BPS = 7e12
STORAGE_SOURCE = "Tectonic, 2 TB/s sustained (7 TB/s peak): Llama Team, arXiv:2407.21783"

DEFAULT_GPU_MTBF_S = LLAMA3_405B.gpu_mtbf_s
DEFAULT_STORAGE_BPS = LLAMA3_STORAGE_SUSTAINED_BPS
DEFAULT_RESTART_S = 600.0  # estimate: Daly (2006)'s examples use R = 10 min (module docstring)
DEFAULT_NODE_STORAGE_BPS = 50e9  # estimate: two 200 Gbit/s front-end NICs per node


def _pcie_x16_Bps(giga_transfers: float) -> float:
    """One direction of a x16 link: GT/s per lane x 16 lanes x 128/130 encoding / 8 bits."""
    return giga_transfers * 1e9 * 16 * 128 / 130 / 8


PCIE_X16_BPS = {"3.0": _pcie_x16_Bps(8), "4.0": _pcie_x16_Bps(16), "5.0": _pcie_x16_Bps(32)}
#: PCIe generation of each GPU preset's host link (costmodels.hardware names).
_HOST_PCIE = {
    "V100 SXM2": "3.0",
    "RTX 2080 Ti": "3.0",
    "A100 40GB SXM": "4.0",
    "A100 80GB SXM": "4.0",
    "H100 SXM": "5.0",
    "H100 PCIe": "5.0",
    "H200 SXM": "5.0",
    "MI300X": "5.0",
}


def host_link(gpu_name: str) -> tuple[float, str]:
    """(bytes/s one way, description) of the copy from the GPU to its host's memory."""
    generation = _HOST_PCIE.get(gpu_name)
    if generation is None:
        return PCIE_X16_BPS["5.0"], f"PCIe 5.0 x16 assumed for the {gpu_name} (not confirmed)"
    rate = PCIE_X16_BPS[generation]
    return rate, f"PCIe {generation} x16 of the {gpu_name}, {rate / 1e9:.1f} GB/s one way"
