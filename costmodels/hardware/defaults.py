"""The network a question assumes when the user names none: one definition for every surface.

Issue 30, item 4: the command line and the calculator answered the same question with different
networks (``predict`` 100 Gbit/s against the Compare page's 100 GbE preset; predict-llm's
25 GB/s per GPU against the LLM page's InfiniBand HDR preset; a typed "400 Gbit/s" against the
NDR preset's 45 GB/s achievable). The defaults live here and both surfaces read them:

- ``DP_NETWORK``: ``commatlas predict``/``compare`` without ``--inter`` and the Compare page's
  inter-node link, per NIC and direction: the "100 GbE" preset (nominal x achievable fraction
  and latency as in costmodels.hardware.links, both marked there as estimates).
- ``LLM_INTER``/``LLM_INTER_LATENCY``: predict-llm, plan-llm, predict-serving, predict-goodput
  without ``--inter`` and the LLM planner, Serving and Goodput pages, per GPU and direction:
  25 GB/s, one 200 Gbit/s NIC per GPU taken as achieved (rail-optimised), 5 us per message
  (the latency of costmodels.llm.shapes.LLMCluster).
- ``NCCL_NIC``: the Collectives pages' NIC, the "InfiniBand NDR" preset.

A typed bandwidth is taken as achieved; a preset is its nominal rate times its achievable
fraction, so "400 Gbit/s" (50 GB/s) is not "InfiniBand NDR" (400 Gbit/s x 0.9 = 45 GB/s).
``achieved_text`` writes a preset's achieved bandwidth as a unit string: the calculator starts
its custom-bandwidth boxes from it, so switching a preset to "custom" changes no number.
"""

from __future__ import annotations

from costmodels.hardware.links import get_link

DP_NETWORK = "100 GbE"
LLM_INTER = "25 GB/s"
LLM_INTER_LATENCY = "5 us"
NCCL_NIC = "InfiniBand NDR"


def achieved_text(preset: str) -> str:
    """The preset's achieved bandwidth per direction as a unit string: "45 GB/s" for NDR."""
    link = get_link(preset)
    return f"{link.bandwidth_Bps * link.achievable_fraction / 1e9:.6g} GB/s"


def latency_text(preset: str) -> str:
    """The preset's latency per message as a unit string: "2 us" for NDR."""
    return f"{get_link(preset).latency_s * 1e6:.6g} us"
