"""One data-parallel iteration: cluster, exchange, compression cost, predict/compare, validation.

- ``cluster``: the links and NCCL system of a data-parallel cluster; ``collective_time``: an
  all-reduce by algorithm name and nccl-tests' bus-bandwidth factors;
- ``compression_cost`` / ``compression_exchange`` / ``compression_breakeven``: what a
  compressor's kernels and its exchange cost, and when compression pays;
- ``ps_pipeline``: a parameter server's pipelined push/pull; ``ps_pull_queue``: BytePS's
  BSP/WFBP partition by partition, pull requests queued behind pushes;
- ``predict`` (``commatlas predict``), ``compare`` (formula comparisons of the calculator);
- ``validation*``: predictions against measured runs (``commatlas validate-models``).

It drives the schedules (costmodels/schedules) and workloads (costmodels/workloads) below it.
"""
