"""PowerSGD at GPU speed: products in the gradient's precision, orthogonalisation by Cholesky QR.

Paper: T. Vogels, S. P. Karimireddy and M. Jaggi, "PowerSGD: Practical low-rank gradient
compression for distributed optimization", NeurIPS 2019, arXiv:1905.13727 (the algorithm: steps
1-5 of powersgd.py, unchanged, including the warm start and the two all-reduces).

What differs from :class:`~reference_impls.compression.powersgd.PowerSGD`, and why:

1. M Q and P^T M run in the gradient's own dtype: for bfloat16 / float16 gradients on a GPU
   they use the tensor cores and read M as it is, where powersgd.py first writes a float32 copy
   of M (twice its bytes) that both products then read. For float32 gradients nothing changes.
2. Step 3 orthonormalises P (rows x r, in float64: r columns cost nothing) by shifted
   Cholesky QR (T. Fukaya, R. Kannan, Y. Nakatsukasa, Y. Yamamoto and Y. Yanagisawa, "Shifted
   Cholesky QR for computing the QR factorization of ill-conditioned matrices", SIAM J. Sci.
   Comput. 42(1), 2020, arXiv:1809.11085), three passes of G = P^T P, G + s I = L L^T,
   P <- P L^-T. A first shift of order u ||P||^2 lets the factorisation finish however
   ill-conditioned P is (we take s = 11 (rows r + r (r + 1)) u ||P||_F^2, u the unit roundoff,
   the Frobenius norm bounding the 2-norm from above); the two later passes, shifted by
   u trace(G) only, restore orthonormality. Each pass is an r x r Gram matrix, a Cholesky factor
   and a triangular solve: no Householder QR (on a GPU a solver call of several launches), no
   host synchronisation (``cholesky_ex`` does not check), and a zero P yields a zero basis
   instead of NaN. Up to column signs the basis is Householder QR's, so P P^T M is the same up
   to rounding.

Payload, wire bytes, exchange and rule for uncompressed tensors: as powersgd.py.

Communication cost: two ring all-reduces of rows r and cols r values, 2 (p-1)/p (rows + cols) r
w_v bytes per rank (cost model ``powersgd``, variant ``ring-allreduce``).

Example::

    fast = get("powersgd/fast", rank=4, error_feedback=True)
    allreduce_compressed(weight.grad, fast, name="layer1.weight")
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from reference_impls.compression.catalog import register_compressor
from reference_impls.compression.onebit_sgd import matrix_shape
from reference_impls.compression.powersgd import PowerSGD
from reference_impls.registry import reference_impl

PASSES = 3  # one shifted pass, then Cholesky QR twice ("shiftedCholeskyQR3" in the paper)


def cholesky_orthonormalize(factor: torch.Tensor, passes: int = PASSES) -> torch.Tensor:
    """Orthonormal columns spanning ``factor``'s (rows x r, float32 or float64) by shifted
    Cholesky QR; an all-zero factor gives an all-zero basis. Same shape and dtype."""
    rows, r = factor.shape
    unit = torch.finfo(factor.dtype).eps / 2
    eye = torch.eye(r, dtype=factor.dtype, device=factor.device)
    basis = factor
    for step in range(passes):
        gram = basis.T @ basis
        # The first shift makes any P factorisable; later passes see a well-conditioned basis
        # and take u trace(G), just enough to keep a rank-deficient one finite.
        scale = 11 * (rows * r + r * (r + 1)) if step == 0 else 1
        shift = scale * unit * gram.diagonal().sum() + torch.finfo(factor.dtype).tiny
        lower, _ = torch.linalg.cholesky_ex(gram + shift * eye)
        basis = torch.linalg.solve_triangular(lower, basis.T, upper=False).T
    return basis


@register_compressor("powersgd/fast")
@reference_impl(record="powersgd", variant="ring-allreduce")
class FastPowerSGD(PowerSGD):
    """PowerSGD with products in the gradient's dtype and Cholesky QR (see the module doc)."""

    def _power_step(
        self, tensor: torch.Tensor, name: str, reduce: Callable[[torch.Tensor], None]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        rows, cols = matrix_shape(tensor.shape)
        matrix = tensor.reshape(rows, cols)  # no float32 copy: the products run in its dtype
        p_factor = matrix @ self._warm_q(name, cols, tensor.device, tensor.dtype)
        reduce(p_factor)
        # float64: an r-column factor costs nothing extra, and keeps the basis orthonormal to
        # ~1e-15 for cond(P) up to ~1e8 (float32 loses it from ~1e6 on)
        p_hat = cholesky_orthonormalize(p_factor.to(torch.float64)).to(tensor.dtype)
        q_local = (p_hat.T @ matrix).T.contiguous()  # (P^T M)^T streams M row by row
        q_sum = q_local.clone()
        reduce(q_sum)
        return p_hat, q_local, q_sum
