"""Row and column sub-groups of a rows x cols grid of ranks, created once and cached.

Used by the hierarchical and 2D-torus all-reduces. The group's ranks, in ascending global rank
order, fill the grid row by row: row i holds positions i*cols .. i*cols + cols - 1 (a "node" of
consecutive ranks), column j the positions congruent to j modulo cols.

``dist.new_group`` is itself collective. For the default group (or any group spanning every
process) every process creates every row and column group, in the same order, so the first call
must be made by all processes, as for ``dist.new_group``. For a smaller group only its members
call in, so each creates just its own row and column with ``use_local_synchronization=True``;
torch names such groups from their ranks and the number of groups the process has created, so
the members must have created the same number of process groups before the first call.
"""

from __future__ import annotations

import torch.distributed as dist

# (id of the default group, the group's global ranks, cols) -> (row group, column group). The
# default group's id makes a cache entry die with a destroyed and re-initialised default group.
_CACHE: dict[tuple[int, tuple[int, ...], int], tuple[dist.ProcessGroup, dist.ProcessGroup]] = {}


def grid_subgroups(
    group: dist.ProcessGroup | None, cols: int
) -> tuple[dist.ProcessGroup, dist.ProcessGroup]:
    """This rank's row group (``cols`` ranks) and column group (p / cols ranks) within ``group``.

    Within each returned group, ranks keep their grid order: a rank's index in its row group is
    its column, its index in its column group is its row.
    """
    ranks = sorted(dist.get_process_group_ranks(dist.group.WORLD if group is None else group))
    key = (id(dist.group.WORLD), tuple(ranks), cols)
    if key not in _CACHE:
        rows = len(ranks) // cols
        row_lists = [ranks[i * cols : (i + 1) * cols] for i in range(rows)]
        col_lists = [ranks[j::cols] for j in range(cols)]
        me = ranks.index(dist.get_rank())
        mine = (row_lists[me // cols], col_lists[me % cols])
        if len(ranks) == dist.get_world_size():
            created = {}
            for members in row_lists + col_lists:  # every process, the same order
                created[tuple(members)] = dist.new_group(members)
            _CACHE[key] = (created[tuple(mine[0])], created[tuple(mine[1])])
        else:
            row_group = dist.new_group(mine[0], use_local_synchronization=True)
            col_group = dist.new_group(mine[1], use_local_synchronization=True)
            _CACHE[key] = (row_group, col_group)
    return _CACHE[key]
