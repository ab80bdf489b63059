"""The site's guides, each a generator whose numbers the cost models compute at build time.

- ``choose-allreduce``: which all-reduce algorithm for which message size and world size;
- ``compression-pays``: when gradient compression beats the dense all-reduce;
- ``scheduling-overlap``: BSP, WFBP, tensor fusion, MG-WFBP and ByteScheduler;
- ``llm-parallelism``: TP, PP, DP and ZeRO for large language models;
- ``calibrate-cluster``: measuring your cluster and feeding the fit to the predictions;
- ``llm-step-time``: where an LLM training step's time goes (the operator model);
- ``serving``: decode time, the KV cache and disaggregated pools (costmodels.serving);
- ``checkpoint-goodput``: checkpoint interval and goodput under failures (costmodels.goodput);
- ``stragglers``: BSP against SSP, local SGD and backup workers (costmodels.stragglers);
- ``trace-calibration``: profiler traces, what-if replays and measured steps that transfer;
- ``job-files``: start from your job's own torchtitan / Megatron / DeepSpeed / Accelerate file.

- ``cloud-networks``: which cloud network is my cluster (cluster presets and transports).

Each module's ``files(tax)`` returns its page (``generated/guides/<slug>.md``) and charts
(``generated/guides/plots/<name>.svg``); ``guide_files`` unions them.
"""

from __future__ import annotations

from commatlas.docs_site import Files
from commatlas.docs_site.guides import (
    calibrate_cluster,
    choose_allreduce,
    cloud_networks,
    compression_pays,
    goodput_page,
    job_files,
    llm_parallelism,
    llm_step_time,
    scheduling_overlap,
    serving,
    stragglers,
    trace_calibration,
)
from taxonomy import Taxonomy

GUIDES = {
    "choose-allreduce": choose_allreduce,
    "compression-pays": compression_pays,
    "scheduling-overlap": scheduling_overlap,
    "llm-parallelism": llm_parallelism,
    "calibrate-cluster": calibrate_cluster,
    "llm-step-time": llm_step_time,
    "serving": serving,
    "checkpoint-goodput": goodput_page,
    "stragglers": stragglers,
    "trace-calibration": trace_calibration,
    "job-files": job_files,

    "cloud-networks": cloud_networks,
}
SLUGS = tuple(GUIDES)


def guide_files(tax: Taxonomy) -> Files:
    """{path relative to docs/: text} of every guide page and chart."""
    files: Files = {}
    for module in GUIDES.values():
        files.update(module.files(tax))
    return files
