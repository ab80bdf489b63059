"""``commatlas predict-llm | plan-llm``: large-model training cost models from the command line.

The flags and JSON keys are a contract (issues 5, 14, 16). ``predict-llm --json`` prints one
object with the StepPrediction fields (iteration_time_s, memory_per_gpu_bytes, bubble_fraction,
model_flops_utilization, tokens_per_s_per_gpu, compute_breakdown_s ...) plus ``layout``,
``shape`` (every TransformerShape field), ``model`` (where the shape came from), ``gpu`` (name
and the peaks used), ``cluster`` (links and where the intra-node one comes from), ``precision``,
``framework``, ``recipe`` (the framework knobs: reduce dtype, FSDP resharding and prefetch, fp8
recipe, async TP, fp8 all-gather) and ``calibration`` (null, or what was fitted on which measured
layout). Issue 26 adds ``memory_breakdown_bytes`` (parameters, gradients, optimizer_states,
activations, communication_buffers, runtime_overhead; they sum to memory_per_gpu_bytes),
``usable_memory_bytes`` and ``memory_reserve_bytes`` (what ``fits`` compares against),
``expected_error_pct`` and ``unvalidated_mechanisms`` (costmodels/llm/error_bands.py).
``plan-llm --json`` prints a list of such predictions with their layouts, fastest first.
Bad input exits 2 with one line naming the flag; the work lives in costmodels.llm.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict
from typing import Any

from commatlas.job_files.apply import add_from_flag, apply_job_file, job_file_lines
from commatlas.job_files.emit import add_emit_flags, emit_layout, emit_target
from commatlas.llm_args import add_plan_flags, add_predict_flags, layout_json, shape_overrides
from commatlas.llm_measured import calibration_from_args
from commatlas.llm_recipe_args import check_recipe_for_model, recipe_from_args
from commatlas.plan_llm_output import print_plan_table, why_no_plan
from costmodels.llm.memory_margin import at_the_limit
from costmodels.safe_output import json_text


def _resolved(args: argparse.Namespace):
    from costmodels.llm.shape_inputs import resolve_shape

    return resolve_shape(model=args.model, hf_config=args.hf_config,
                         overrides=shape_overrides(args))  # fmt: skip


def _shape(args: argparse.Namespace):
    """The TransformerShape the flags describe (the docs' guides check their commands with it)."""
    return _resolved(args).shape


def _cluster(args: argparse.Namespace):
    """The LLMCluster the flags describe."""
    return cluster_and_source(args)[0]


def cluster_and_source(args: argparse.Namespace) -> tuple[Any, str]:
    """The LLMCluster of --cluster/--gpu/--gpus-per-node/--intra/--inter and where its intra
    link comes from (predict-llm, plan-llm, predict-serving, predict-goodput share it).
    ``--inter`` is one NIC (commatlas.network_flags); the cluster keeps one GPU's share of the
    node's network, NICs x the NIC's rate / GPUs per node."""
    from commatlas.network_flags import nic_achieved_Bps, preset_or_none
    from costmodels.hardware import get_gpu
    from costmodels.llm.intra_link import gpu_intra_link
    from costmodels.llm.shapes import LLMCluster
    from costmodels.units import parse_bandwidth

    preset = preset_or_none(args)
    if args.gpu is None:
        args.gpu = preset.gpu if preset else getattr(args, "gpu_default", "a100-80gb")
    if args.gpus_per_node is None:
        args.gpus_per_node = preset.gpus_per_node if preset else 8
    try:
        gpu = get_gpu(args.gpu)
    except ValueError as exc:
        raise ValueError(f"--gpu: {exc}") from None
    if args.intra is None:
        link = gpu_intra_link(gpu)
        intra, intra_latency, where = link.bandwidth_Bps, link.latency_s, link.description
    else:
        intra, intra_latency = parse_bandwidth(args.intra, "--intra"), 2e-6
        where = f"--intra {args.intra}"
    transport = args.transport or (preset.transport if preset else None)
    from costmodels.hardware.defaults import LLM_INTER

    per_nic = nic_achieved_Bps(args, preset, transport, LLM_INTER)  # the calculator's default
    nics = args.nics_per_node or (preset.nics_per_node if preset else args.gpus_per_node)
    share = per_nic * nics / args.gpus_per_node
    extra: dict[str, Any] = {}
    if transport is not None:  # the transport's own hop latency (costmodels.nccl.transports)
        from costmodels.nccl.transports import get_transport

        extra["inter_latency_s"] = get_transport(transport).hop_latency_s
    cluster = LLMCluster(gpu, args.gpus_per_node, intra, share, intra_latency_s=intra_latency,
                         transport=transport, **extra)  # fmt: skip
    return cluster, where


def _check_precision(args: argparse.Namespace, gpu: Any) -> None:
    # bf16 on a chip without bf16 tensor cores runs at the fp16 peak (costmodels.llm.precision);
    # fp8 without fp8 tensor cores is an error there, named here by its flag.
    if args.precision == "fp8" and gpu.fp8_tflops is None:
        raise ValueError(f"--precision fp8: the {gpu.name} has no fp8 tensor cores; use bf16")
    if args.precision == "fp4" and gpu.fp4_tflops is None:  # issue 39: NVFP4 training
        raise ValueError(f"--precision fp4 (NVFP4 training): the {gpu.name} has no FP4 tensor "
                         "cores (Blackwell only); use fp8 or bf16")  # fmt: skip


def args_layout(args: argparse.Namespace, shape: Any, cluster: Any):
    from costmodels.llm.layout_check import LayoutError, checked_layout, nodes_problem

    layout = checked_layout(
        shape, tp=args.tp, pp=args.pp, dp=args.dp, global_batch=args.global_batch,
        micro_batch=args.micro_batch, interleave=args.interleave, zero=args.zero,
        sequence_parallel=args.sequence_parallel, recompute=args.recompute, cp=args.cp,
        ep=args.ep, gpus_per_node=None if args.tp_across_nodes else cluster.gpus_per_node,
        recompute_every=getattr(args, "recompute_every", 1), dp_shard=getattr(args, "dp_shard", 0),
        first_stage_layers=getattr(args, "first_stage_layers", 0),
        last_stage_layers=getattr(args, "last_stage_layers", 0), etp=getattr(args, "etp", 0),
    )  # fmt: skip
    problem = nodes_problem(args.tp * args.pp * args.dp * args.cp, cluster.gpus_per_node)
    if problem:
        raise LayoutError(problem)
    return layout


def gpu_json(gpu: Any, precision: str) -> dict[str, Any]:
    """The GPU's name and peaks, and the dense peak its linear GEMMs run at in ``precision``."""
    from costmodels.llm.precision import linear_gemm_dtype, tensor_peak_flops

    out = {key: value for key, value in asdict(gpu).items() if key != "source"}
    peak = tensor_peak_flops(gpu, linear_gemm_dtype(precision)) / 1e12
    return {**out, "gemm_peak_tflops": peak, "source": gpu.source}


def resolve_context(args: argparse.Namespace) -> dict[str, Any]:
    """Everything both commands resolve first: shape, cluster, step options, calibration."""
    from dataclasses import replace

    from costmodels.llm.power import clock_factor

    resolved = _resolved(args)
    cluster, intra_source = cluster_and_source(args)
    if getattr(args, "power_cap", None) is not None:
        clock_factor(cluster.gpu.name, args.power_cap)  # ValueError naming --power-cap
        cluster = replace(cluster, power_cap_w=args.power_cap)
    _check_precision(args, cluster.gpu)
    options = {"precision": args.precision, "framework": args.framework}
    if hasattr(args, "reduce_dtype"):
        options["recipe"] = recipe_from_args(args)
        check_recipe_for_model(args, resolved.shape)
    return {"resolved": resolved, "cluster": cluster, "intra_source": intra_source,
            "options": options}  # fmt: skip


def _echo(ctx: dict[str, Any], calibration: dict[str, Any] | None) -> dict[str, Any]:
    cluster = ctx["cluster"]
    return {
        "model": ctx["resolved"].source,
        "shape": asdict(ctx["resolved"].shape),
        "gpu": gpu_json(cluster.gpu, ctx["options"]["precision"]),
        "cluster": {
            "gpus_per_node": cluster.gpus_per_node,
            "intra_bandwidth_Bps": cluster.intra_bandwidth_Bps,
            "intra_latency_s": cluster.intra_latency_s,
            "intra_source": ctx["intra_source"],
            "inter_bandwidth_Bps": cluster.inter_bandwidth_Bps,
            "inter_meaning": "one GPU's share of the node's network: --inter (one NIC) x "
            "--nics-per-node / GPUs per node",
            "inter_latency_s": cluster.inter_latency_s,
            "power_cap_w": cluster.power_cap_w,
            "transport": cluster.transport or "ib",
        },
        **{k: (asdict(v) if k == "recipe" else v) for k, v in ctx["options"].items()},
        "calibration": calibration,
        "precision_note": _precision_note(ctx["options"]),
    }


def _precision_note(options: dict[str, Any]) -> str:
    from costmodels.llm.fp8_recipes import precision_note

    recipe = options.get("recipe")
    notes = [precision_note(options["precision"], getattr(recipe, "fp8_recipe", None))]
    if getattr(recipe, "moe_dispatcher", None) == "hybridep":  # issue 39: said, never silent
        notes.append("--moe-dispatcher hybridep: DeepEP's hierarchical form at HybridEP's "
                     "published NVLink and fp8 rates (NVIDIA's B200 table); its network part "
                     "is unvalidated beyond NVIDIA's H100 rows")  # fmt: skip
    return "; ".join(note for note in notes if note)


def _moe_note(shape: Any, layout: Any, cluster: Any, options: dict[str, Any]) -> str:
    """Issue 39 item 5: where the EP group sits, how its exchange and load are priced."""
    from costmodels.llm.moe_notes import moe_note
    from costmodels.llm.recipe import DEFAULT_RECIPE

    return moe_note(shape, layout, cluster, options.get("recipe") or DEFAULT_RECIPE)


def _fail(command: str, exc: Exception) -> int:
    print(f"commatlas {command}: {' '.join(str(exc).split())}", file=sys.stderr)
    return 2


def percentages(step: dict[str, Any], gpu: Any, precision: str) -> dict[str, Any]:
    """``mfu_pct`` and ``hfu_pct``: the utilisations of a step as percentages of the GPU's dense
    BF16 peak, as torchtitan and Megatron-LM report MFU whatever the GEMMs run in (issue 42);
    ``mfu_native_pct``: of the peak of the precision's own GEMMs (FP8's under --precision fp8,
    what ``model_flops_utilization`` holds); the two differ only for FP8."""
    from costmodels.llm.precision import linear_gemm_dtype, tensor_peak_flops

    native = tensor_peak_flops(gpu, linear_gemm_dtype(precision))
    to_bf16 = native / tensor_peak_flops(gpu, "bf16")
    return {"mfu_pct": 100 * step["model_flops_utilization"] * to_bf16,
            "hfu_pct": 100 * step["hardware_flops_utilization"] * to_bf16,
            "mfu_native_pct": 100 * step["model_flops_utilization"],
            "mfu_basis": "dense BF16 peak (torchtitan, Megatron-LM); mfu_native_pct: the "
            f"{linear_gemm_dtype(precision).upper()} peak the linear GEMMs run at"}  # fmt: skip


def predict_llm_command(args: argparse.Namespace) -> int:
    from commatlas.host_note import step_host_note
    from costmodels.llm.step import predict_step

    try:
        apply_job_file(args, "predict-llm")
        ctx = resolve_context(args)
        shape, cluster = ctx["resolved"].shape, ctx["cluster"]
        layout = args_layout(args, shape, cluster)
        calibration, report, cluster = calibration_from_args(args, shape, cluster, layout,
                                                             ctx["options"])  # fmt: skip
        step = predict_step(shape, layout, cluster, **ctx["options"], calibration=calibration)
    except ValueError as exc:  # UnitParseError, ShapeError, LayoutError, ConfigError ...
        return _fail("predict-llm", exc)
    step_json = asdict(step)
    gpu, precision = cluster.gpu, ctx["options"]["precision"]
    out = {**step_json, **percentages(step_json, gpu, precision), "layout": layout_json(layout),
           **_echo(ctx, report), "moe_note": _moe_note(shape, layout, cluster, ctx["options"]),
           "host_note": step_host_note(step, shape, layout, cluster, ctx["options"],
                                       calibration)}  # fmt: skip
    if args.job_file_report:  # --from: what was read, ignored and assumed (issue 41)
        out["job_file"] = args.job_file_report
    if args.json:
        print(json_text(out))
    else:  # a layout that does not fit is an answer, said first; the exit code stays 0
        from commatlas.llm_summary import summary_lines

        print("\n".join(summary_lines(out) + job_file_lines(args)))
    return 0


def _plan_choices(args: argparse.Namespace) -> dict[str, Any]:
    sp = {"both": (False, True), "on": (True,), "off": (False,)}[args.sequence_parallel]
    from costmodels.llm.planner import default_recompute_modes, default_zero_stages

    modes = args.recompute_modes or default_recompute_modes(args.framework)
    stages = args.zero_stages or default_zero_stages(args.framework)
    return dict(micro_batches=args.micro_batches, zero_stages=stages,
                recompute=modes, sequence_parallel=sp,
                context_parallel=args.cp, expert_parallel=args.ep,
                max_interleave=args.max_interleave,
                stage_layers=(args.first_stage_layers, args.last_stage_layers),
                expert_tensor_parallel=args.etp)  # fmt: skip


def plan_llm_command(args: argparse.Namespace) -> int:
    from costmodels.llm.planner import plan

    try:
        apply_job_file(args, "plan-llm")
        emit_to = emit_target(args)
        ctx = resolve_context(args)
        shape, cluster = ctx["resolved"].shape, ctx["cluster"]
        calibration, report, cluster = calibration_from_args(args, shape, cluster, None,
                                                             ctx["options"])  # fmt: skip
        options = {**ctx["options"], "calibration": calibration}
        ranked = plan(shape, args.gpus, cluster, args.global_batch, step_options=options,
                      **_plan_choices(args))[: args.top]  # fmt: skip
    except ValueError as exc:  # includes TooManyLayouts
        return _fail("plan-llm", exc)
    if not ranked:
        why = why_no_plan(args, shape, cluster, options, _plan_choices(args))
        print(f"commatlas plan-llm: {why}", file=sys.stderr)
        return 1
    gpu, precision = cluster.gpu, ctx["options"]["precision"]
    rows = [{**(step := asdict(c.prediction)), **percentages(step, gpu, precision),
             "at_memory_limit": at_the_limit(step["memory_per_gpu_bytes"],
                                             step["usable_memory_bytes"]),
             "layout": layout_json(c.layout)} for c in ranked]  # fmt: skip
    # --emit: the fastest layout as the framework's config (issue 41); to stdout instead of it
    if emit_to is not None and emit_layout(args, emit_to, shape, ranked[0].layout):
        return 0
    if args.job_file_report:
        print("\n".join(job_file_lines(args)), file=sys.stderr if args.json else sys.stdout)
    if args.json:
        print(json_text(rows))
        return 0
    print_plan_table(rows, _echo(ctx, report))
    return 0


def add_parsers(sub: argparse._SubParsersAction) -> None:
    pred = sub.add_parser("predict-llm", help="predict one training step of a large transformer")
    add_predict_flags(pred)
    add_from_flag(pred)
    pred.set_defaults(run=predict_llm_command)
    plan = sub.add_parser("plan-llm", help="rank every valid parallel layout by step time")
    add_plan_flags(plan)
    add_emit_flags(plan)
    add_from_flag(plan)
    plan.set_defaults(run=plan_llm_command)
