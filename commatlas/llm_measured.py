"""``--measured-step SECONDS [--measured-layout tp=8,pp=2,dp=4,mb=1]``: calibrate the step model on
one measured step, then predict (predict-llm) or rank (plan-llm) with the fitted factors.

predict-llm: the measured layout is the predicted one unless ``--measured-layout`` names another
(keys not given keep the predicted layout's values). plan-llm: ``--measured-layout`` is required
(keys not given take the Layout defaults: mb 1, v 1, zero 0, recompute none, sp off, cp 1, ep 1).
The fit is ``costmodels.llm.calibrate_step.fit_from_measured_step`` on the same model, cluster,
global batch, precision and framework. The JSON's ``calibration`` says what was fitted, the
measured layout, the uncalibrated prediction of it and the calibrated one (which reproduces the
measurement when the fit is exact).
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from commatlas.llm_args import layout_json
from costmodels.llm.measured_layout import measured_layout

FLAG = "--measured-layout"


def fit_measured_step(
    shape: Any, measured: Any, cluster: Any, seconds: float, options: dict[str, Any],
    what: str = "--measured-step",
) -> tuple[Any, dict[str, Any]]:  # fmt: skip
    """(StepCalibration, its JSON report) fitted on one measured step of ``measured``."""
    from costmodels.llm.calibrate_step import fit_from_measured_step
    from costmodels.llm.step import predict_step

    try:
        calibration = fit_from_measured_step(shape, measured, cluster, seconds, **options)
    except ValueError as exc:
        message = str(exc).replace("measured_step_s", what)
        raise ValueError(message if what in message else f"{what}: {message}") from None
    before = predict_step(shape, measured, cluster, **options)
    after = predict_step(shape, measured, cluster, **options, calibration=calibration)
    report = {
        "measured_step_s": seconds,
        "measured_layout": layout_json(measured),
        **asdict(calibration),
        "predicted_before_s": before.iteration_time_s,
        "reproduced_s": after.iteration_time_s,
    }
    return calibration, report


def calibration_from_args(
    args: argparse.Namespace, shape: Any, cluster: Any, layout: Any, options: dict[str, Any]
) -> tuple[Any, dict[str, Any] | None]:
    """(StepCalibration or None, the JSON report of the fit or None). ``layout`` is the
    predicted layout (predict-llm) or None (plan-llm)."""
    if args.measured_step is None:
        if args.measured_layout:
            raise ValueError(f"{FLAG} needs --measured-step (the time measured on it)")
        return None, None
    if layout is None and not args.measured_layout:
        raise ValueError(f"--measured-step needs {FLAG} (the layout it was measured on)")
    per_node = None if getattr(args, "tp_across_nodes", False) else cluster.gpus_per_node
    measured = measured_layout(shape, args.measured_layout, global_batch=args.global_batch,
                               gpus_per_node=per_node, base=layout)  # fmt: skip
    return fit_measured_step(shape, measured, cluster, args.measured_step, options)
