"""Parameter-server communication (push/pull over sharded servers) and SSP training."""

from reference_impls.parameter_server.push_pull import ps_push_pull, ps_roles
from reference_impls.parameter_server.ssp import ServedRead, SSPReport, ssp_train

__all__ = ["SSPReport", "ServedRead", "ps_push_pull", "ps_roles", "ssp_train"]
