"""The text of the goodput guide (``generated/guides/checkpoint-goodput.md``); the numbers come
from :mod:`commatlas.docs_site.guides.goodput`."""

from __future__ import annotations

from commatlas.docs_site import Files
from commatlas.docs_site.guides import _common as c
from commatlas.docs_site.guides import goodput as g
from costmodels.goodput import sources as s
from taxonomy import Taxonomy

SLUG = "checkpoint-goodput"


def page_text(tax: Taxonomy) -> str:
    link = lambda rid: c.record_link(tax, rid)  # noqa: E731
    llama = g.llama_results()
    sync, lazy = llama["sync"], llama["async"]
    size_tb = g.checkpoint_size(g.preset_shape(g.MODEL, g.SEQ), g.LAYOUT, 8).total_bytes / 1e12
    errors = g.interval_errors()
    small, large = g.WHAT_IF_GPUS[0], g.WHAT_IF_GPUS[-1]
    fast, slow = g.WHAT_IF_STORAGE[-1], g.WHAT_IF_STORAGE[0]
    hourly_small, hourly_large = (
        g.what_if_goodput(n, fast, True, "sync") - g.what_if_goodput(n, fast, False, "sync")
        for n in (small, large)
    )
    slow_sync, slow_async = (
        g.what_if_goodput(large, fast, True, m) - g.what_if_goodput(large, slow, True, m)
        for m in ("sync", "async")
    )
    lines = [
        "# Failures, checkpoints and goodput",
        "",
        "**The question.** A job on thousands of GPUs fails every few hours. How often should "
        "it checkpoint, how long does a checkpoint of its model and optimizer state take to "
        "write, and what share of the wall-clock time is left as kept training progress "
        "(its goodput)? CommAtlas answers with Young's and Daly's checkpoint models fed by the "
        "checkpoint size of your layout, your storage and a failure rate from published data.",
        "",
        "## The model",
        "",
        f"{link('periodic-checkpointing')}: the job computes for an interval τ, then stops δ "
        "to checkpoint. Failures arrive at random (a Poisson process) with mean time M between "
        "them; a failure loses the work since the last checkpoint and costs a restart R. With "
        "p GPUs that each fail with mean time M_g, M = M_g / p. Daly's complete model gives "
        "the expected wall-clock time T_w of T_s seconds of work, and the goodput T_s / T_w:",
        "",
        "$$",
        r"T_w = M e^{R/M} \left(e^{(\tau + \delta)/M} - 1\right) \frac{T_s}{\tau}",
        "$$",
        "",
        "Young (1974) balanced the checkpoint cost δ/τ against the work lost per failure "
        "(τ/2 on average); Daly (2006) added higher-order terms; setting the derivative of T_w "
        "to zero gives the exact optimum through Lambert's W (which R does not move):",
        "",
        *g.formulas(),
        f"What δ is depends on how the checkpoint is written. Synchronously, training waits "
        f"for the whole write. {link('checkfreq')} copies the state to host memory beside the "
        "next step's forward and backward, so training waits only for what of the copy is "
        "longer (the tables below know no step time and charge the whole copy; "
        "`predict-goodput --global-batch` subtracts the predicted step), and "
        f"writes to storage behind training; {link('gemini-ckpt')} copies that snapshot into "
        "a peer machine's memory instead. Both leave a window after the snapshot in which a "
        "failure falls back one checkpoint, which adds that window to the work redone after "
        f"each restart. {link('jit-checkpointing')} (saving only after a failure) is not "
        "modelled.",
        "",
        "## Daly's examples, reproduced",
        "",
        "Daly's Figs. 3–5 use δ = 5 min and R = 10 min; the captions give the interval his "
        "model predicts. Ours, with Young's and the exact optimum and the goodput at Daly's "
        "interval:",
        "",
        *c.table(
            ["M", "Daly 2006 (published)", "Daly (ours)", "Young", "exact", "goodput"],
            g.daly_rows(),
        ),  # fmt: skip
        f"Young's interval is {c.format_percent(errors['young_24h'])} too long at M = 24 h "
        f"and {c.format_percent(errors['young_15min'])} too long at 15 min; Daly's stays "
        f"within {c.format_percent(errors['daly_max'], 2)} of the exact optimum. A seeded "
        "simulation of the same jobs "
        f"({g.SIM_TRIALS:,} runs of {g.SIM_SEGMENTS} segments each) against T_w / T_s:",
        "",
        *c.table(["M", "T_w / T_s (formula)", "simulated", "difference"], g.simulation_rows()),
        "## A Llama 3 405B-sized job",
        "",
        f"{g.MODEL} on {g.LAYOUT.gpus:,} H100s (TP {g.LAYOUT.tp}, PP {g.LAYOUT.pp}, DP "
        f"{g.LAYOUT.dp}, ZeRO-1), 14 bytes per parameter saved (bf16 weights, fp32 master "
        f"weights and Adam moments): a {size_tb:.2f} TB checkpoint. Failures at the rate "
        f"Meta reported for Llama 3 pre-training ({s.LLAMA3_405B.unexpected} unexpected "
        f"interruptions in {s.LLAMA3_405B.days:g} days on {s.LLAMA3_405B.gpus:,} GPUs, "
        f"arXiv:2407.21783), i.e. one per {s.DEFAULT_GPU_MTBF_S / 86_400:,.0f} GPU-days and "
        f"one per {sync.job_mtbf_s / 3600:.2f} h for this job; storage at the "
        f"{s.DEFAULT_STORAGE_BPS / 1e12:g} TB/s sustained the same report gives; restart "
        "10 min plus reading the checkpoint back:",
        "",
        *c.table(
            ["mode", "training waits", "then in the background", "interval", "restart", "goodput"],
            g.llama_rows(),
        ),  # fmt: skip
        f"Synchronous checkpoints every {g.minutes(sync.optimal_interval_s)} keep "
        f"{c.format_percent(sync.expected_goodput)} of the time; Meta reports more than 90 % "
        "effective training time for the real run, whose figure also counts the planned "
        "interruptions and whatever its real writes and restarts cost: the two agree in size, "
        "and nothing here was fitted to Meta's figure. "
        f"Asynchronous writes cut the stall to {c.format_seconds(lazy.checkpoint_write_s)} "
        f"and allow a checkpoint every {g.minutes(lazy.optimal_interval_s)}; of the "
        f"{c.format_percent(1 - lazy.expected_goodput)} still lost, restarts take "
        f"{c.format_percent(lazy.waste.restart)} (Young's first-order split).",
        "",
        "## What if",
        "",
        "Goodput at the optimal interval and at a fixed 1 h interval, by job size (the "
        "data-parallel degree grows) and storage bandwidth:",
        "",
        *c.table(
            [
                "GPUs",
                "storage",
                *(f"optimal, {m}" for m in g.MODES),
                *(f"1 h, {m}" for m in g.MODES),
            ],
            g.what_if_rows(),
        ),  # fmt: skip
        f"At {small:,} GPUs checkpointing hourly instead of at the optimum costs "
        f"{c.format_percent(hourly_small)} of the time (synchronous, 2 TB/s); at {large:,} "
        f"it costs {c.format_percent(hourly_large)}. Storage ten times slower costs "
        f"synchronous checkpoints {c.format_percent(slow_sync)} at {large:,} GPUs, "
        f"asynchronous ones {c.format_percent(slow_async)}. Try your own in the "
        f"[calculator's Goodput page]({c.CALCULATOR}).",
        "",
        "## What is left out",
        "",
        "Failures that strike several GPUs at once or cluster in time (the model treats each "
        "GPU as an independent Poisson process), planned interruptions, slow-downs that are "
        "not failures (stragglers), the loss of every in-memory copy of a shard, "
        "storage contention from other jobs, and expert-parallel sharding of MoE optimizer "
        "states (counted as if replicated over the expert-parallel group).",
        "",
        *c.reproduce(reproduce_lines()),
    ]
    return "\n".join(lines)


def reproduce_lines() -> list[str]:
    return [
        "- The Llama table: `commatlas predict-goodput --model llama-3.1-405b --gpu h100 --tp 8 "
        "--pp 9 --dp 224 --zero 1 --json` (add `--mode async` or `--mode in-memory`).",
        "- The what-if table: `commatlas predict-goodput --model llama-3.1-405b --gpu h100 "
        "--tp 8 --pp 9 --dp 224 --zero 1 --what-if-gpus 1008 4032 16128 --what-if-storage "
        "'200 GB/s' '2 TB/s' --what-if-interval optimal '1 h'`.",
        "- Daly's examples: `commatlas predict-goodput --model llama-3.1-8b --tp 1 --pp 1 --dp 1 "
        "--job-mtbf '24 h' --interval-rule daly` prices your own checkpoint; "
        "`costmodels.goodput.daly_interval(300, 86400)` gives Daly's 117 min.",
        "- In Python: `costmodels.goodput.checkpoint_size`, `predict_goodput`, `what_if`; the "
        "simulation is `costmodels.goodput.simulate.simulate_wall_time`.",
    ]


def files(tax: Taxonomy) -> Files:
    return {f"generated/guides/{SLUG}.md": page_text(tax)}
