"""Measurement on a real cluster, run under torchrun: ``commatlas calibrate``,
``commatlas import-nccl-tests`` and ``commatlas check-ddp``.

Modules, lowest first; each imports only those above it, the shared argument types of
:mod:`commatlas.cli_types`, and the packages below commatlas (costmodels, reference_impls):

* :mod:`.collectives`: time collectives, fit alpha-beta, print the fits (``report``);
* :mod:`.nccl_import`: the same profile from nccl-tests logs;
* :mod:`.ddp_probes`, :mod:`.ddp_timing`, :mod:`.ddp_measure`: what check-ddp times;
* :mod:`.calibrate`, :mod:`.check_ddp`: the command-line entry points.

Nothing here imports the CLI (commatlas/cli.py), the docs generator or the servers; they import
this. ``python -m commatlas.calibrate`` and ``python -m commatlas.check_ddp`` (the commands the
README and the guides name) are two thin modules that call :func:`.calibrate.main` and
:func:`.check_ddp.main`. tests/test_import_direction.py holds the rule.
"""
