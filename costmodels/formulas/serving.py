"""Closed form of the prefill-to-decode KV-cache transfer (cost model ``kv-cache-transfer``).

In disaggregated serving (DistServe, Zhong et al., OSDI '24; Splitwise, Patel et al., ISCA '24;
Mooncake, Qin et al., FAST '25) a request's cache, n bytes, leaves the prefill instance once.
Its p GPUs each hold a shard of n/p (their KV heads of their layers) and send it at the same
time over their own path, so the transfer takes one latency and n/p bytes::

    T = alpha + (n / p) beta                    across nodes (RDMA or TCP, one NIC per GPU)
    T = alpha_intra + (n / p) beta_intra        inside a node (NVLink; DistServe's placement)

with n = prompt tokens x 2 x layers x KV heads x head size x bytes per element
(costmodels.serving.kv_cache). Unlike a collective, one GPU alone still has to send: the cost
does not vanish at p = 1. costmodels.serving.transfer adds the layer-wise variant that overlaps
the pieces with the prefill (Splitwise, Mooncake); it needs the prefill time, which is not a
symbol of this family.
"""

from __future__ import annotations

from costmodels.model import CostModel, Variant
from costmodels.symbols import alpha, alpha_intra, beta, beta_intra, n, p

SHARD = n / p

MODEL = CostModel(
    id="kv-cache-transfer",
    title="KV-cache transfer from a prefill instance to a decode instance",
    variants={
        "inter-node": Variant(
            time=alpha + SHARD * beta,
            bytes_sent={"rank": SHARD},
            description="every prefill GPU sends its shard over its own NIC (RDMA or TCP)",
            free_at_one_worker=False,
        ),
        "intra-node": Variant(
            time=alpha_intra + SHARD * beta_intra,
            bytes_sent={"rank": SHARD},
            description="prefill and decode GPUs share a node: the shards cross NVLink",
            free_at_one_worker=False,
        ),
    },
    source=(
        "Y. Zhong et al., 'DistServe: disaggregating prefill and decoding for goodput-optimized "
        "large language model serving', OSDI '24; P. Patel et al., 'Splitwise: efficient "
        "generative LLM inference using phase splitting', ISCA '24, arXiv:2311.18677."
    ),
    assumptions=(
        "n = bytes of one request's KV cache after prefill: prompt tokens x 2 x layers x KV "
        "heads x head size x bytes per element (grouped-query attention: KV heads only)",
        "p = GPUs of the prefill instance holding distinct shards (pp x min(tp, KV heads)); "
        "they send at once, each on its own path",
        "the whole cache is sent after the prefill (none of it overlapped with compute)",
        "one message per shard: one latency",
    ),
)

MODELS = [MODEL]
