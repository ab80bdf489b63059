"""Constants from measurements: profiles and fits, nccl-tests logs, probes, robust fits, links.

- ``profile``: a cluster profile (alpha, beta per collective and level) and its fits;
  ``robust_fit``: the Huber fit and identifiability check behind them;
- ``nccl_tests``: nccl-tests output parsed into measurements; ``nccl_from_profile`` /
  ``nccl_shipped_logs``: the NCCL model calibrated with them, and checked on the shipped logs;
- ``profile_links``: the links a profile implies for a prediction; ``ddp_check``: the
  prediction that ``commatlas check-ddp`` holds against a measured DDP run;
- ``trace``: PyTorch profiler traces (``import-trace``, ``what-if``) and the calibration file;
- ``measured_run``, ``step_transfer``, ``measured_steps``, ``measured_csv``: measured training
  steps that calibrate the LLM step model across runs (``--measured-layout``, ``--measured``);
  ``transfer_prior`` / ``prior_estimate``: how much of a measured error carries (an
  empirical-Bayes shrinkage estimated on the dev data); ``torchtitan_dev``: the torchtitan dev
  rows as measured runs, and the one-step transfers between them.

This room sits above the models it calibrates (costmodels/nccl, costmodels/dp): it imports
them, they never import it. The torchrun measurement entry points are in commatlas/measure.
"""
