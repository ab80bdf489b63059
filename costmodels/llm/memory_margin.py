"""How close a layout's predicted memory sits to the GPU's usable memory, in words.

The memory model is within 10 % of the caching-allocator peaks torchtitan reports for its H200
FSDP runs (47.96 and 46.97 GiB; tests/costmodels/test_llm_memory_breakdown.py holds it), so a
layout predicted to use more than 90 % of the usable memory may not fit when it runs: it is "at
the limit" (issue 42, item 1: the planner's default answer used 79.6 of 79.6 GiB and said
nothing). ``plan-llm`` and the LLM planner page mark such a layout instead of presenting it
as a safe choice.
"""

from __future__ import annotations

MEMORY_BAND = 0.10  # the memory model's error on the dev runs that report memory (docstring)


def at_the_limit(memory_bytes: float, usable_bytes: float) -> bool:
    """Whether a layout that fits uses more than ``1 - MEMORY_BAND`` of the usable memory."""
    return memory_bytes <= usable_bytes and memory_bytes > (1 - MEMORY_BAND) * usable_bytes


def limit_note(memory_bytes: float, usable_bytes: float) -> str:
    """One sentence for a layout at the limit ("" for one with room to spare)."""
    if not at_the_limit(memory_bytes, usable_bytes):
        return ""
    gib = 2**30
    return (f"at the limit: {memory_bytes / gib:.1f} of {usable_bytes / gib:.1f} GiB usable, "
            f"within the memory model's ±{100 * MEMORY_BAND:.0f} %: it may not fit")  # fmt: skip
