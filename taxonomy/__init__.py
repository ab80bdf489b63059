"""The knowledge base: one validated record per technique (see DESIGN.md)."""

from taxonomy.loader import Problem, Taxonomy, TaxonomyError, collect, load_taxonomy
from taxonomy.schema import Citation, Placement, Record, Related

__all__ = [
    "Citation",
    "Placement",
    "Problem",
    "Record",
    "Related",
    "Taxonomy",
    "TaxonomyError",
    "collect",
    "load_taxonomy",
]
