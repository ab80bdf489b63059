"""What the fork server of :func:`reference_impls.testing.run_distributed` imports once.

Every family of reference implementations, so a child process forked from the server has them
already; a test module named by the function a child runs is still imported by that child.
"""

from reference_impls.entry_points import registered

registered()  # imports every family (collectives, compression, optimizers, scheduling, ...)
