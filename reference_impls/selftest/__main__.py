"""``python -m reference_impls.selftest``: see :mod:`reference_impls.selftest`."""

from reference_impls.selftest.runner import main

raise SystemExit(main())
