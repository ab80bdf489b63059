"""Measured steps and calibration files for ``predict-llm`` / ``plan-llm``.

- ``--measured-step SECONDS [--measured-layout KEY=VALUE,...]``: one measured step; the layout
  text takes the layout keys and ``framework=``, ``precision=``, ``global_batch=``, ``seq=``,
  ``model=`` (costmodels.calibration.measured_run), so a step measured on another run (another
  precision, framework, batch or model) calibrates this one. predict-llm: keys not given keep
  the predicted run's values; plan-llm: ``--measured-layout`` is required (tp, pp, dp at least).
- ``--measured FILE``: several measured steps (a CSV, costmodels.calibration.measured_csv),
  fitted robustly: outliers are reported by row, and the JSON says which constants the steps
  identified (costmodels.calibration.measured_steps).
- ``--calibration FILE``: a calibration file of ``commatlas import-trace``: its GEMM and
  memory-bound scales set StepCalibration, its intra-node efficiency the NVLink bandwidth (when
  it came from two or more ranks' traces: one rank's NCCL times include waiting for the others).
  With a measured step as well, the file's network stays and the step fits the compute.

The JSON's ``calibration`` says what was fitted, on which runs, before and after.
"""

from __future__ import annotations

import argparse
from dataclasses import asdict, replace
from typing import Any

from commatlas.llm_args import layout_json

FLAG = "--measured-layout"


def _file_calibration(path: str, cluster: Any) -> tuple[Any, Any, dict[str, Any], bool]:
    """(StepCalibration, cluster, report, network known) of a calibration file."""
    from costmodels.calibration.trace.calibration_file import load_calibration
    from costmodels.llm.step_calibration import StepCalibration

    cal = load_calibration(path)
    compute, network = cal.compute, cal.network
    fitted = tuple(
        name
        for name, value in (
            ("gemm_scale", compute.gemm_scale),
            ("overhead_scale", compute.memory_bound_scale),
        )
        if value is not None
    )
    step = StepCalibration(
        gemm_scale=compute.gemm_scale or 1.0,
        overhead_scale=compute.memory_bound_scale or 1.0,
        fitted=fitted,
        source=f"--calibration {path} ({cal.source})",
    )
    report: dict[str, Any] = {
        "calibration_file": path,
        "trace_gpu": cal.gpu.preset,
        "not_identified": dict(compute.not_identified),
    }
    known = False
    if network.intra_efficiency is not None and network.ranks >= 2:
        efficiency = min(network.intra_efficiency, 1.0)
        cluster = replace(cluster, intra_bandwidth_Bps=cluster.intra_bandwidth_Bps * efficiency)
        report["intra_efficiency"] = efficiency
        known = True
    else:
        report["not_identified"]["intra_efficiency"] = (
            network.not_identified.get("intra_efficiency")
            or "measured on one rank's trace: its NCCL times include waiting for the other "
            "ranks, so the links are left as given"
        )
    if cal.gpu.preset and cal.gpu.preset != cluster.gpu.name:
        report["warning"] = (
            f"the trace ran on {cal.gpu.preset}, the prediction is for "
            f"{cluster.gpu.name}: its kernel efficiencies may not carry"
        )
    return step, cluster, report, known


def _runs(args: argparse.Namespace, shape: Any, cluster: Any, layout: Any, options: dict) -> list:
    from costmodels.calibration.measured_csv import read_measured_steps
    from costmodels.calibration.measured_run import measured_run

    per_node = None if getattr(args, "tp_across_nodes", False) else cluster.gpus_per_node
    common = dict(
        shape=shape,
        global_batch=args.global_batch,
        precision=options["precision"],
        framework=options["framework"],
        base=layout,
        gpus_per_node=per_node,
    )
    if args.measured:
        return read_measured_steps(args.measured, **common)
    return [
        measured_run(
            args.measured_layout,
            args.measured_step,
            label=FLAG,
            seconds_label="--measured-step",
            **common,
        )
    ]


def calibration_from_args(
    args: argparse.Namespace, shape: Any, cluster: Any, layout: Any, options: dict[str, Any]
) -> tuple[Any, dict[str, Any] | None, Any]:
    """(StepCalibration or None, the JSON report or None, the cluster to predict on).
    ``layout`` is the predicted layout (predict-llm) or None (plan-llm)."""
    from costmodels.calibration.measured_steps import fit_steps
    from costmodels.calibration.step_transfer import scaled_cluster

    measured = getattr(args, "measured", None)
    if measured and args.measured_step is not None:
        raise ValueError("give --measured-step (one step) or --measured FILE (several), not both")
    if args.measured_step is None and not measured:
        if args.measured_layout:
            raise ValueError(f"{FLAG} needs --measured-step (the time measured on it)")
        if getattr(args, "calibration", None):
            step, cluster, report, _ = _file_calibration(args.calibration, cluster)
            return step, {**asdict(step), **report}, cluster
        return None, None, cluster
    if layout is None and args.measured_step is not None and not args.measured_layout:
        raise ValueError(f"--measured-step needs {FLAG} (the layout it was measured on)")
    report: dict[str, Any] = {}
    known = False
    if getattr(args, "calibration", None):
        _, cluster, report, known = _file_calibration(args.calibration, cluster)
        report["note"] = "the measured steps fit the compute; the file's network is kept"
    runs = _runs(args, shape, cluster, layout, options)
    fit = fit_steps(runs, cluster, network_known=known)
    calibration = replace(fit.calibration, source=fit.calibration.source or runs[0].label)
    first = runs[0]
    report.update(
        {
            **asdict(calibration),
            "network_scale": fit.network_scale,
            "identified": fit.identified,
            "not_identified": {**report.get("not_identified", {}), **fit.not_identified},
            "outliers": fit.outliers,
            "rows": fit.rows,
            "notes": fit.notes,
            "measured_layout": layout_json(first.layout),
            "measured_run": {
                "precision": first.precision,
                "framework": first.framework,
                "seq_len": first.shape.seq_len,
                "layers": first.shape.layers,
                "hidden": first.shape.hidden,
            },
        }
    )
    if args.measured_step is not None and fit.rows:
        report["measured_step_s"] = args.measured_step
        report["predicted_before_s"] = fit.rows[0]["predicted_before_s"]
        report["reproduced_s"] = fit.rows[0]["predicted_s"]
    return calibration, report, scaled_cluster(cluster, fit.network_scale)
