"""Every symbol the cost formulas use, with its meaning and SI unit.

All formulas are in SI: seconds, bytes, bytes per second. Each symbol is a positive sympy
``Symbol`` so simplification may assume positivity. ``SYMBOLS`` maps the plain name used as a
keyword argument of ``CostModel.evaluate`` (``p``, ``n``, ``alpha`` ...) to its :class:`SymbolInfo`.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp


@dataclass(frozen=True)
class SymbolInfo:
    """A formula symbol: the sympy object, what it means and its SI unit (a pint string)."""

    symbol: sp.Symbol
    meaning: str
    unit: str  # pint-parsable; "dimensionless" for counts

    @property
    def name(self) -> str:
        return self.symbol.name

    @property
    def latex(self) -> str:
        return sp.latex(self.symbol)


def _sym(name: str, latex_name: str, meaning: str, unit: str, integer: bool = False) -> SymbolInfo:
    symbol = sp.Symbol(latex_name, positive=True, integer=integer or None)
    return SymbolInfo(symbol, meaning, unit)


_ALL = {
    "p": _sym("p", "p", "number of workers (ranks that compute gradients)", "dimensionless", True),
    "n": _sym("n", "n", "message size: bytes of the dense gradient or tensor", "byte"),
    "alpha": _sym("alpha", "alpha", "latency per message (start-up time)", "second"),
    "beta": _sym("beta", "beta", "transfer time per byte (inverse bandwidth)", "second / byte"),
    "gamma": _sym("gamma", "gamma", "reduction (summation) time per byte", "second / byte"),
    "S": _sym(
        "S", "S", "number of parameter-server shards (server processes)", "dimensionless", True
    ),
    "k": _sym("k", "k", "number of selected (non-zero) elements per worker", "dimensionless", True),
    "w_v": _sym("w_v", "w_v", "bytes per transmitted value (4 for fp32)", "byte"),
    "w_i": _sym("w_i", "w_i", "bytes per transmitted index (4 for int32)", "byte"),
    # Hierarchical clusters: p = g * (p / g) ranks, g per node; intra-node link parameters.
    "g": _sym("g", "g", "ranks per node (size of the inner group)", "dimensionless", True),
    "alpha_intra": _sym(
        "alpha_intra", "alpha_intra", "latency per message inside a node", "second"
    ),
    "beta_intra": _sym(
        "beta_intra", "beta_intra", "transfer time per byte inside a node", "second / byte"
    ),
    # Compression.
    "d": _sym("d", "d", "number of elements of the tensor", "dimensionless", True),
    "b": _sym("b", "b", "bits per transmitted element", "bit"),
    "s": _sym("s", "s", "number of quantization levels", "dimensionless", True),
    "r": _sym("r", "r", "rank of a low-rank approximation", "dimensionless", True),
    "rows": _sym("rows", "rows", "rows of a gradient viewed as a matrix", "dimensionless", True),
    "cols": _sym("cols", "cols", "columns of a gradient viewed as a matrix", "dimensionless", True),
    "gamma_c": _sym(
        "gamma_c", "gamma_c", "compress + decompress compute time per dense byte", "second / byte"
    ),
    # Schedules.
    "H": _sym(
        "H", "H", "local steps between synchronisations (local SGD period)", "dimensionless", True
    ),
    # Pipelines.
    "m": _sym("m", "m", "micro-batches per pipeline per step", "dimensionless", True),
    "v": _sym("v", "v", "virtual pipeline stages per GPU (interleaving)", "dimensionless", True),
    "t_f": _sym("t_f", "t_f", "forward time of one micro-batch on one stage", "second"),
    "t_b": _sym("t_b", "t_b", "backward time of one micro-batch on one stage", "second"),
    # NCCL model (costmodels/nccl): per-call cost, protocol efficiency, NICs per node.
    "alpha_0": _sym(
        "alpha_0", "alpha_0", "fixed cost of one collective call (launch, base latency)", "second"
    ),
    "eta": _sym(
        "eta",
        "eta",
        "share of the bottleneck link's rate an algorithm and protocol deliver",
        "dimensionless",
    ),
    "K": _sym("K", "K", "NICs (network rails) per node", "dimensionless", True),
    # Techniques after the surveys (costmodels/formulas/recent): zero-bubble and DualPipe
    # pipelines, expert-parallel dispatch/combine, Streaming DiLoCo.
    "t_w": _sym(
        "t_w", "t_w", "weight-gradient part of one micro-batch's backward on one stage", "second"
    ),
    "t_fb": _sym(
        "t_fb",
        "t_fb",
        "one forward and one backward chunk run overlapped (DualPipe's F&B)",
        "second",
    ),
    "k_e": _sym(
        "k_e", "k_e", "experts each token is routed to (the router's top-k)", "dimensionless", True
    ),
    "M_n": _sym(
        "M_n",
        "M_n",
        "most nodes one token may be sent to (node-limited routing)",
        "dimensionless",
        True,
    ),
    "F": _sym(
        "F",
        "F",
        "fragments the model is split into for staggered synchronisation",
        "dimensionless",
        True,
    ),
    # Failures and checkpoints (costmodels/goodput): Young 1974, Daly 2006.
    "M_g": _sym("M_g", "M_g", "mean time between failures of one GPU", "second"),
    "R_f": _sym(
        "R_f", "R_f", "restart after a failure, before the checkpoint is read back", "second"
    ),
    "tau_c": _sym("tau_c", "tau_c", "compute time between two checkpoints", "second"),
    "t_ov": _sym(
        "t_ov",
        "t_ov",
        "compute a background snapshot overlaps: the next step's forward and backward",
        "second",
    ),
    "T_s": _sym("T_s", "T_s", "failure-free compute time of the whole job", "second"),
    # Stragglers (costmodels/stragglers): a worker's step time = t_0 + Exp(mean theta).
    "t_0": _sym("t_0", "t_0", "fastest compute time of one worker's step (the shift)", "second"),
    "theta": _sym(
        "theta", "theta", "mean of the exponential part of a worker's step time", "second"
    ),
    "k_b": _sym(
        "k_b",
        "k_b",
        "backup workers: extra workers whose gradients are not waited for",
        "dimensionless",
        True,
    ),
}

SYMBOLS: dict[str, SymbolInfo] = {key: info for key, info in _ALL.items()}
BY_SYMBOL: dict[sp.Symbol, str] = {info.symbol: key for key, info in SYMBOLS.items()}

p = SYMBOLS["p"].symbol
n = SYMBOLS["n"].symbol
alpha = SYMBOLS["alpha"].symbol
beta = SYMBOLS["beta"].symbol
gamma = SYMBOLS["gamma"].symbol
S = SYMBOLS["S"].symbol
k = SYMBOLS["k"].symbol
w_v = SYMBOLS["w_v"].symbol
w_i = SYMBOLS["w_i"].symbol
g = SYMBOLS["g"].symbol
alpha_intra = SYMBOLS["alpha_intra"].symbol
beta_intra = SYMBOLS["beta_intra"].symbol
d = SYMBOLS["d"].symbol
b = SYMBOLS["b"].symbol
s = SYMBOLS["s"].symbol
r = SYMBOLS["r"].symbol
rows = SYMBOLS["rows"].symbol
cols = SYMBOLS["cols"].symbol
gamma_c = SYMBOLS["gamma_c"].symbol
H = SYMBOLS["H"].symbol
m = SYMBOLS["m"].symbol
v = SYMBOLS["v"].symbol
t_f = SYMBOLS["t_f"].symbol
t_b = SYMBOLS["t_b"].symbol
alpha_0 = SYMBOLS["alpha_0"].symbol
eta = SYMBOLS["eta"].symbol
K = SYMBOLS["K"].symbol
t_w = SYMBOLS["t_w"].symbol
t_fb = SYMBOLS["t_fb"].symbol
k_e = SYMBOLS["k_e"].symbol
M_n = SYMBOLS["M_n"].symbol
F = SYMBOLS["F"].symbol
M_g = SYMBOLS["M_g"].symbol
R_f = SYMBOLS["R_f"].symbol
tau_c = SYMBOLS["tau_c"].symbol
t_ov = SYMBOLS["t_ov"].symbol
T_s = SYMBOLS["T_s"].symbol
t_0 = SYMBOLS["t_0"].symbol
theta = SYMBOLS["theta"].symbol
k_b = SYMBOLS["k_b"].symbol


def key_of(symbol: sp.Symbol) -> str:
    """The keyword name of a formula symbol; raises KeyError naming unknown symbols."""
    try:
        return BY_SYMBOL[symbol]
    except KeyError:
        raise KeyError(f"symbol {symbol} is not declared in costmodels.symbols") from None
