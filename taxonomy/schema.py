"""Pydantic models for one taxonomy record and its parts.

A record is one technique of distributed deep-learning communication. Its shape is fixed in
DESIGN.md ("Contracts other parts rely on"); ``extra="forbid"`` makes a misspelt field an error
rather than silently dropped data.

Rules a record follows beyond its field types (``commatlas validate`` checks those marked *):

**Citations and year.** ``citations[0]`` is the primary source, the work the record mainly
describes. Where that work is not where the technique came from (an implementation, a later
version, a product document), the record also cites the origin. The origin is marked ``origin:
true`` whenever an earlier citation exists that is not the origin (background, hardware it needs;
at most one mark per record*). ``Record.year``, the year the exports and the "Since the surveys"
page show, is the technique's year: that of the citation marked ``origin``, else of the earliest
citation (which is then taken to be the origin). A citation's own ``year`` is the year of that
publication (its venue's year; the first public version where the venue is a preprint server).
A record whose earliest citation reads as a later document (documentation, a later version of a
standard, a blog, a repository) marks its origin, even when that document is the origin itself
(:mod:`taxonomy.origins` finds them; tests/taxonomy/test_origins.py holds the list).

**Survey A placement** (Shi et al., "A Quantitative Survey of Communication Optimizations in
Distributed Deep Learning", IEEE Network 2021, which surveys "communication optimization
techniques for data parallel distributed DL"; :mod:`taxonomy.scope` holds the rule as code*).
A record gets a slot in survey A when what it changes is the communication of data-parallel
training: the synchronisation of the replicas' gradients or parameters (sharded replicas as in
ZeRO and FSDP included), the data-parallel learning algorithm that sets how much and how often
they synchronise, the scheduling of that traffic, or the collectives, libraries, interconnects,
topologies and transports that carry it (generic ones carry every kind of traffic and keep their
slot). It gets none (``A: null``) when what it changes is model-parallel traffic (tensor,
pipeline, expert or sequence parallelism, overlapping tensor-parallel collectives with their
GEMMs, compressing activations between stages, a library made for expert all-to-alls) or when
it is not a data-parallel communication technique at all: inference serving, cluster and job
scheduling, fault tolerance and checkpointing, performance modelling and simulators, whole
large-model training systems and runs. A slot does not mean the survey discusses the technique
(``mentioned.A`` says that) nor that it predates the survey: later work in scope gets the slot
it would occupy, with ``mentioned.A: not-covered``. Which parallelism's traffic a record changes
is ``properties.parallel_traffic`` where given, else read from its category path (``parallelism
/tensor`` ... ``scheduling/tensor-parallel-overlap``), else data. The slots are
``SURVEY_A_SLOTS``.
"""

from __future__ import annotations

import re
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

KEBAB = r"^[a-z0-9]+(?:-[a-z0-9]+)*$"
SNAKE = r"^[a-z0-9]+(?:_[a-z0-9]+)*$"
KebabId = Annotated[str, StringConstraints(pattern=KEBAB)]
NonEmpty = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]

Level = Literal["algorithm", "framework", "infrastructure"]
Relation = Literal["improves", "generalises", "alternative", "uses", "specialises", "part-of"]

# Survey A (Shi et al. 2021) has three levels; survey B (Liang et al. 2024) has four layers plus
# its LLM case study. A placement is "<level or section>/<sub-topic>".
SURVEY_A_LEVELS = ("learning-algorithm", "system-architecture", "network-infrastructure")
# Survey A's sub-topics under each level: CommAtlas's names for the groups of its text.
SURVEY_A_SLOTS = {
    "learning-algorithm": ("communication-synchronization", "gradient-compression"),
    "system-architecture": ("communication-architecture", "scheduling-overlap"),
    "network-infrastructure": (
        "collective-libraries",
        "in-network-aggregation",
        "interconnects",
        "topologies",
        "transports",
    ),
}
SURVEY_B_SECTIONS = (
    "model-synchronization",
    "data-compression",
    "resource-allocation-training",
    "resource-allocation-inference",
    "infrastructures",
    "llm-case-study",
)

DOI_PATTERN = re.compile(r"^10\.\d{4,9}/\S+$")
ARXIV_PATTERN = re.compile(r"^\d{4}\.\d{4,5}(v\d+)?$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Citation(_Strict):
    """A publication, checked against a public source when ``verified`` is true.

    ``authors`` is the work's own author line, in its order (a group heads it only where the work
    says so, as BLOOM's "BigScience Workshop"). A work that names no author, or not all of them
    (a company document, a forum post whose poster is not shown), is cited by the organisation
    that published it alone (``[NVIDIA]``, ``[PyTorch]``), with ``verification_note`` saying so;
    an invented group is never listed beside named people.
    """

    title: NonEmpty
    authors: list[NonEmpty] = Field(min_length=1)
    venue: NonEmpty
    year: int = Field(ge=1950, le=2100)
    doi: str | None = None
    arxiv: str | None = None
    url: str | None = None
    verified: bool
    # What was checked and where, or why it could not be confirmed.
    verification_note: str | None = None
    # True on the work the technique came from when an earlier citation is not that work
    # (module docstring: "Citations and year").
    origin: bool = False

    @field_validator("doi")
    @classmethod
    def _doi_shape(cls, value: str | None) -> str | None:
        if value is not None and not DOI_PATTERN.match(value):
            raise ValueError(f"{value!r} is not a DOI (expected '10.<registrant>/<suffix>')")
        return value

    @field_validator("arxiv")
    @classmethod
    def _arxiv_shape(cls, value: str | None) -> str | None:
        if value is not None and not ARXIV_PATTERN.match(value):
            raise ValueError(f"{value!r} is not an arXiv id (expected 'YYMM.NNNNN')")
        return value

    @model_validator(mode="after")
    def _has_identifier(self) -> Citation:
        if not (self.doi or self.arxiv or self.url):
            raise ValueError("a citation needs a doi, an arxiv id or a url")
        if not self.verified and not self.verification_note:
            raise ValueError("an unverified citation must say what could not be confirmed")
        return self


Mention = Literal["confirmed", "unconfirmed", "not-covered"]


class Mentions(_Strict):
    """Whether each survey is known to discuss the technique (not just to have a slot for it)."""

    A: Mention = "unconfirmed"
    B: Mention = "unconfirmed"


class Placement(_Strict):
    """Where the technique sits in each survey's taxonomy, and whether each survey discusses it.

    ``A``/``B`` give the slot in that survey's structure (None: outside its scope); ``mentioned``
    says whether the survey text is known to cover the technique itself: "confirmed" (seen in the
    survey, its benchmark code or a summary of it), "unconfirmed" (fits the scope, not checked
    against the full text) or "not-covered".
    """

    A: str | None = None
    B: str | None = None
    mentioned: Mentions = Mentions()
    # How the placement was established (which part of which survey, or what is unconfirmed).
    note: str | None = None

    @field_validator("A")
    @classmethod
    def _survey_a(cls, value: str | None) -> str | None:
        if value is None:
            return value
        level, _, slot = value.partition("/")
        if level not in SURVEY_A_LEVELS:
            raise ValueError(f"survey A placement must start with one of {SURVEY_A_LEVELS}")
        if slot not in SURVEY_A_SLOTS[level]:
            raise ValueError(
                f"survey A slot {value!r}: under {level!r} use one of {SURVEY_A_SLOTS[level]}"
            )
        return value

    @field_validator("B")
    @classmethod
    def _survey_b(cls, value: str | None) -> str | None:
        if value is not None and value.split("/")[0] not in SURVEY_B_SECTIONS:
            raise ValueError(f"survey B placement must start with one of {SURVEY_B_SECTIONS}")
        return value


Scalar = str | int | float | bool
Compression = Literal["quantization", "sparsification", "low-rank", "hybrid", "none"]
ParallelTraffic = Literal["data", "tensor", "pipeline", "expert", "sequence", "hybrid"]


class Properties(BaseModel):
    """Filterable facts. The named keys have fixed meanings; other scalar keys are allowed."""

    model_config = ConfigDict(extra="allow", frozen=True)

    synchronization: Literal["bsp", "asp", "ssp", "local", "decentralized", "n/a"] | None = None
    communicates: str | None = None  # what travels: dense gradients, top-k pairs, activations...
    collective: str | None = None  # all-reduce, all-gather, push/pull, all-to-all, p2p, n/a
    compression: Compression | None = None
    bits: float | None = None  # bits per transmitted element, for quantizers
    compression_ratio: str | None = None
    needs_error_feedback: bool | None = None
    unbiased: bool | None = None
    typical_scale: str | None = None  # e.g. "8-1024 GPUs", "thousands of GPUs"
    # Whose traffic the technique changes, where the category path does not say it (survey A's
    # scope rule, taxonomy.scope): data-parallel replicas or a model-parallel dimension.
    parallel_traffic: ParallelTraffic | None = None

    @model_validator(mode="after")
    def _extras_are_scalars(self) -> Properties:
        for key, value in (self.model_extra or {}).items():
            if not re.match(SNAKE, key):
                raise ValueError(f"property name {key!r} must be snake_case")
            if not isinstance(value, Scalar):
                raise ValueError(f"property {key!r} must be a string, number or boolean")
        return self

    def as_dict(self) -> dict[str, Scalar]:
        return {k: v for k, v in self.model_dump().items() if v is not None}


class Related(_Strict):
    id: KebabId
    relation: Relation


class Record(_Strict):
    """One technique: what it is, where it sits, who proposed it, and what executes it."""

    id: KebabId
    name: NonEmpty
    aliases: list[NonEmpty] = []
    level: Level
    category: list[KebabId] = Field(min_length=1)
    placement: Placement
    summary: NonEmpty
    # True: leaves synchronous SGD's updates unchanged (up to summation order); False: approximates
    # or delays them; None: not applicable (hardware, measurement studies, training runs).
    lossless: bool | None
    properties: Properties = Properties()
    citations: list[Citation] = Field(min_length=1)
    related: list[Related] = []
    # A cost-model id (costmodels.get) or null when no formula exists yet.
    cost_model: KebabId | None = None
    # "package.module:object" of the reference implementation, or null.
    reference_impl: Annotated[str, StringConstraints(pattern=r"^[\w.]+:[\w.]+$")] | None = None

    @property
    def year(self) -> int:
        """The technique's year: its origin citation's, else its earliest citation's."""
        origins = [c.year for c in self.citations if c.origin]
        return origins[0] if origins else min(c.year for c in self.citations)

    @field_validator("citations")
    @classmethod
    def _one_origin(cls, value: list[Citation]) -> list[Citation]:
        if sum(c.origin for c in value) > 1:
            raise ValueError("at most one citation is the technique's origin (origin: true)")
        return value

    @field_validator("summary")
    @classmethod
    def _summary_length(cls, value: str) -> str:
        sentences = [s for s in re.split(r"(?<=[.!?])\s+", value.strip()) if s]
        if not 3 <= len(sentences) <= 6:
            raise ValueError(f"a summary has 3-6 sentences, this one has {len(sentences)}")
        return value
