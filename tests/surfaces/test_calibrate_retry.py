"""``commatlas calibrate`` on a busy machine (commatlas/measure/retry.py): a sweep whose times
do not grow is measured again, longer and wider; what still does not fit is one line."""

from __future__ import annotations

from commatlas.measure.retry import ATTEMPTS, REPEAT_FACTOR, measure_fitted, too_noisy, widened
from costmodels.calibration.profile import Measurement


def _rows(name: str, sizes, seconds) -> list[Measurement]:
    return [Measurement(collective=name, level="intra", world_size=2, ranks_per_node=2,
                        bytes=float(n), seconds=s)
            for n, s in zip(sizes, seconds, strict=True)]  # fmt: skip


def test_a_flat_sweep_is_measured_again_wider_and_longer() -> None:
    calls = []

    def measure(names, sizes, repeats):
        calls.append((tuple(names), tuple(sizes), repeats))
        out = []
        for name in names:
            if name == "all-reduce" and len(calls) == 1:  # the busy first sweep: flat
                out += _rows(name, sizes, [1e-3] * len(sizes))
            else:  # 10 us + 1 GB/s
                out += _rows(name, sizes, [1e-5 + n / 1e9 for n in sizes])
        return out

    sizes = [4096, 16384, 65536, 262144, 1 << 20]
    rows, bad = measure_fitted(measure, ["all-reduce", "broadcast"], sizes, 2)
    assert bad == {}
    assert calls[1] == (("all-reduce",), tuple(widened(sizes)), 2 * REPEAT_FACTOR)
    assert max(widened(sizes)) == 16 << 20 and len(calls) == 2
    assert sorted({m.collective for m in rows}) == ["all-reduce", "broadcast"]
    assert max(m.bytes for m in rows if m.collective == "all-reduce") == 16 << 20


def test_what_never_fits_is_one_line_with_what_was_measured() -> None:
    calls = []

    def measure(names, sizes, repeats):
        calls.append(repeats)
        return [m for name in names for m in _rows(name, sizes, [2e-3] * len(sizes))]

    rows, bad = measure_fitted(measure, ["all-reduce"], [4096, 1 << 20], 5)
    assert list(bad) == ["all-reduce"] and len(calls) == 1 + ATTEMPTS
    assert calls == [5 * REPEAT_FACTOR**k for k in range(1 + ATTEMPTS)]
    line = too_noisy(rows, bad)
    assert line.startswith("measurements too noisy: all-reduce (the all-reduce times do not grow")
    assert "4,096 B 2 ms" in line and "\n" not in line
