"""``python -m commatlas.calibrate``: the torchrun entry point of ``commatlas calibrate``.

The code is commatlas/measure/calibrate.py; this module only keeps the documented command.
"""

from commatlas.measure.calibrate import main

if __name__ == "__main__":
    raise SystemExit(main())
