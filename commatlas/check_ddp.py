"""``python -m commatlas.check_ddp``: the torchrun entry point of ``commatlas check-ddp``.

The code is commatlas/measure/check_ddp.py; this module only keeps the documented command.
"""

from commatlas.measure.check_ddp import main

if __name__ == "__main__":
    raise SystemExit(main())
