"""PyTorch profiler (Kineto) traces: read them, classify their kernels, measure their collectives
and overlap, and replay their dependency graph with other kernel and collective times.

- ``reading``: one trace file (JSON or gzip-compressed JSON), bounded, as a document;
- ``timeline``: the document as GPU operations, runtime calls and step annotations;
- ``kernel_classes``: GEMM, attention, memory-bound, optimizer, copy, NCCL by kernel name;
- ``collectives``: each NCCL kernel's operation, bytes, group size and bus bandwidth;
- ``intervals``: union lengths of time intervals (busy, overlapped, exposed);
- ``summary``: what ``commatlas import-trace`` prints (step, compute by class, communication);
- ``gpu_match``: the GPU preset a trace's ``deviceProperties`` name;
- ``compute_efficiency``: measured kernel time against the operator model where shapes are known;
- ``calibration_file``: the calibration YAML the predictions accept (``--calibration``);
- ``replay`` / ``what_if``: the trace's step replayed with re-priced kernels.
"""
