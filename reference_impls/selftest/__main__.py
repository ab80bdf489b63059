"""``python -m reference_impls.selftest``: see :mod:`reference_impls.selftest`.

Under a launcher (WORLD_SIZE set) the rendezvous variables are checked first, before torch
loads: a rank outside the world would otherwise wait at the rendezvous for ever.
"""

import os
import sys

from reference_impls.torchrun_env import torchrun_env

if "WORLD_SIZE" in os.environ and not {"-h", "--help", "--list"} & set(sys.argv[1:]):
    try:
        torchrun_env()
    except ValueError as exc:
        print(f"selftest: {exc} (run under torchrun, or unset WORLD_SIZE for one process)",
              file=sys.stderr)  # fmt: skip
        raise SystemExit(2) from None

from reference_impls.selftest.runner import main  # noqa: E402

raise SystemExit(main())
