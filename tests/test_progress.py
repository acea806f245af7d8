"""Time-left estimates come from the rate after the first batch, which pays for loading the model."""

from __future__ import annotations

from ctx_kernel.kernel.hosts.bulk import Throughput, duration


def test_the_first_batch_does_not_count_towards_the_rate() -> None:
    times = iter([30.0, 31.0, 32.0])  # the model took 30 s to load; then 64 rows a second
    rate = Throughput(clock=lambda: next(times))
    assert rate.left(64, 10_000) is None  # the warm-up batch: no estimate yet
    assert rate.left(128, 10_000) == (10_000 - 128) / 64
    assert round(rate.left(192, 10_000)) == round((10_000 - 192) / 64)


def test_durations_read_naturally() -> None:
    assert [duration(s) for s in (0.2, 40, 200, 3_900)] == ["1 s", "40 s", "3 min", "1 h 5 min"]
