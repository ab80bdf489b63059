"""Parameter-server communication (push/pull over sharded servers)."""

from reference_impls.parameter_server.push_pull import ps_push_pull, ps_roles

__all__ = ["ps_push_pull", "ps_roles"]
