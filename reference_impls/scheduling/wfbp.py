"""Wait-free backpropagation (WFBP): each gradient is all-reduced as soon as backward makes it.

Paper: H. Zhang, Z. Zheng, S. Xu, W. Dai, Q. Ho, X. Liang, Z. Hu, J. Wei, P. Xie and E. P. Xing,
"Poseidon: An Efficient Communication Architecture for Distributed Deep Learning on GPU
Clusters", USENIX ATC 2017 (first described in arXiv 1512.06216, 2015).

Algorithm (one iteration, p ranks):

1. A hook on every parameter (``register_post_accumulate_grad_hook``) fires once backward has
   accumulated that parameter's gradient.
2. The hook launches that gradient's all-reduce (sum) at once, without waiting: backward keeps
   computing the earlier layers while the later layers' gradients travel.
3. :meth:`WaitFreeBackprop.synchronize`, called before the optimizer step, waits for every
   launched all-reduce and divides by p, so each ``.grad`` holds the average over ranks.

Communication cost: one all-reduce per parameter tensor, n_i bytes each, so the bytes equal those
of all-reducing every gradient separately (ring: 2(p-1)/p * n_i per rank) and each tensor pays
the collective's latency once; what WFBP changes is *when* they go. Its iteration time is
schedule ``wfbp`` in ``costmodels.schedules``:
``E_i = max(E_{i-1}, r_i) + comm(n_i)``, ``T = max(forward + backward, E_L)``.

Example::

    wfbp = WaitFreeBackprop(model)          # any launcher, e.g. RingAllReduceThread()
    loss.backward()
    wfbp.synchronize()
    optimizer.step()
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
import torch.distributed as dist

from reference_impls.registry import reference_impl
from reference_impls.scheduling.comm import (
    CommRecord,
    Launcher,
    check_launcher,
    launch_recorded,
    torch_allreduce,
    trainable,
)


@reference_impl
class WaitFreeBackprop:
    """Launch each parameter's gradient all-reduce from its post-accumulate hook.

    One backward per :meth:`synchronize`: a second gradient of the same parameter before then
    raises. ``records`` holds one :class:`CommRecord` per parameter, in launch order.
    """

    def __init__(
        self,
        module: torch.nn.Module,
        group: dist.ProcessGroup | None = None,
        launch: Launcher = torch_allreduce,
    ) -> None:
        self._group = group
        self._launch = check_launcher(launch)
        self._pending: list[tuple[torch.Tensor, torch.futures.Future]] = []
        self._launched: set[str] = set()
        self.records: list[CommRecord] = []
        self._handles = [
            param.register_post_accumulate_grad_hook(self._hook_for(name))
            for name, param in trainable(module)
        ]

    def _hook_for(self, name: str) -> Callable[[torch.Tensor], None]:
        def hook(param: torch.Tensor) -> None:
            if name in self._launched:
                raise RuntimeError(
                    f"WaitFreeBackprop: second gradient of {name!r} before synchronize()"
                )
            self._launched.add(name)
            grad = param.grad
            assert grad is not None  # the hook runs after accumulation
            record = CommRecord(name, grad.numel() * grad.element_size(), time.perf_counter())
            self.records.append(record)
            self._pending.append((grad, launch_recorded(self._launch, grad, self._group, record)))

        return hook

    def synchronize(self) -> list[CommRecord]:
        """Wait for every launched all-reduce, average the gradients; return this step's log."""
        world = dist.get_world_size(self._group)
        for grad, future in self._pending:
            future.wait()
            grad.div_(world)
        records, self.records = self.records, []
        self._pending, self._launched = [], set()
        return records

    def remove(self) -> None:
        """Remove the hooks (the module then trains without this scheduler)."""
        for handle in self._handles:
            handle.remove()
