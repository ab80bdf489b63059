"""The shipped value of the Megatron-on-Hopper tensor rate (costmodels/llm/constants.py
``megatron_hopper_tensor_rate``, one of ``FITTED_WHERE_PRESENT``).

Each framework family's constants are fitted on that family's dev runs: the A100 Megatron ones
on vTrain and Narayanan Table 1, the PyTorch-native ones on torchtitan and nanotron
(benchmarks/llm_step_fit.py). Megatron-Core on Hopper with Transformer Engine is only in the DGX
Cloud benchmark rows (../shared/data/dgxc-megatron-h100-dev.csv, corpus source ``dgxc``), so its
rate is fitted there: on the fit half (every other dgxc row, in corpus order), every other
constant held at its shipped value, Levenberg-Marquardt on log(predicted / measured)
(costmodels.llm.fit_constants.fit) within the LOSO bounds. The other half is the hold-out the
benchmark prints. The leave-one-source-out fits (costmodels/validation/loso.py) refit it
themselves and never read this value.

Transformer Engine's cast share (``te_fp8_cast_efficiency``) is not shipped from this fit: fitted
beside the rate it reached 0.19 (torchao's 0.39) and cut dgxc's held-out half to 4.6 % and
llm-foundry's absolute fp8 error (13.5 -> 9.1 %), but it made llm-foundry's fp8 / bf16 step ratio
worse (one measured bf16 step carried to the fp8 runs of MPT-1B/3B on H100: 5.2 / 5.8 -> 7.2 /
7.8 %; issue 37's one-step transfer 7.9 -> 8.2 %): the ratio is the cleaner test of a cast cost,
so the share stays torchao's until a source separates the two (``NAMES``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from costmodels.llm.constants import FITTED_WHERE_PRESENT, StepConstants, default_constants
from costmodels.llm.fit_constants import fit
from costmodels.validation.corpus import CorpusRow, load_corpus
from costmodels.validation.loso import BOUNDS, log_errors, mape

NAMES: tuple[str, ...] = ("megatron_hopper_tensor_rate",)  # see the module docstring


@dataclass(frozen=True)
class MegatronHopperFit:
    """The fitted values and the rows they came from (indices into the dgxc corpus rows)."""

    constants: dict[str, float]
    fit_rows: tuple[int, ...]
    hold_rows: tuple[int, ...]


def unfitted() -> StepConstants:
    """The shipped constants with the two Megatron-on-Hopper ones at their class defaults."""
    plain = StepConstants()
    return replace(default_constants(),
                   **{name: getattr(plain, name) for name in FITTED_WHERE_PRESENT})  # fmt: skip


def fit_megatron_hopper(rows: Sequence[CorpusRow] | None = None,
                        iterations: int = 15) -> MegatronHopperFit:  # fmt: skip
    """Fit ``NAMES`` on the even-indexed dgxc rows (module docstring)."""
    rows = list(rows if rows is not None else load_corpus(("dgxc",)))
    fit_idx = tuple(range(0, len(rows), 2))
    train = [rows[i] for i in fit_idx]
    result = fit(lambda c, _link: log_errors(train, c), NAMES, unfitted(), bounds=BOUNDS,
                 iterations=iterations)  # fmt: skip
    values = {name: float(getattr(result.constants, name)) for name in NAMES}
    return MegatronHopperFit(values, fit_idx, tuple(range(1, len(rows), 2)))


def mean_abs_pct(rows: Sequence[CorpusRow], constants: StepConstants) -> float:
    """Mean |predicted / measured - 1| in percent over ``rows`` (nan for none: loso.mape)."""
    return mape(log_errors(rows, constants))
