"""Hardware as data: GPU peaks and link parameters, every number with the source it was checked in.

Example::

    >>> from costmodels.hardware import get_link
    >>> round(get_link("PCIe 4.0 x16").bandwidth_Bps / 1e9, 1)
    31.5
"""

from costmodels.hardware.gpus import GPU, GPUS, get_gpu
from costmodels.hardware.links import LINKS, Link, get_link

__all__ = ["GPU", "GPUS", "LINKS", "Link", "get_gpu", "get_link"]
