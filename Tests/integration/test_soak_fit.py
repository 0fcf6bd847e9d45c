"""The soaks' leak verdict (Tests/soak/fit.py) on synthetic series: a slow leak is caught, a
flat noisy series passes, an fd or thread leak is caught. Pure arithmetic, no daemon; it lives
here so that `make test` (the integration step) runs it. Series: an hour sampled every 10 s,
as `make soak` samples, with seeded noise."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "soak"))
import fit  # noqa: E402

HOUR = 3600.0


def series(rss_per_h: float = 0.0, anon_per_h: float = 0.0, noise_kib: float = 8.0, steps: bool = True,
           seconds: float = HOUR, every: float = 10.0, seed: int = 1, fds=lambda t: 17, threads=lambda t: 5):
    """Samples like the soak's: page-rounded RSS and anonymous memory with white noise of
    `noise_kib` (s.d.) and, with `steps`, an allocator's level changes (±8 KiB, two pages,
    for 2-10 minutes at a time) on top of a linear trend."""
    rng = random.Random(seed)
    out = []
    level, until = 0.0, 0.0
    t = 0.0
    while t <= seconds:
        if steps and t >= until:
            level = rng.choice([0.0, 0.0, 8.0, -8.0])
            until = t + rng.uniform(120, 600)
        h = t / HOUR
        rss = 8000 + rss_per_h * h + level + rng.gauss(0, noise_kib)
        anon = 2000 + anon_per_h * h + level / 2 + rng.gauss(0, noise_kib)
        out.append({"t": t, "rss_kib": int(rss // 4 * 4), "anon_kib": int(anon // 4 * 4), "fds": fds(t),
                    "threads": threads(t), "cpu_s": t * 0.2})
        t += every
    return out


def verdicts(samples, rate=1000.0, start=None, end=None) -> dict[str, fit.Verdict]:
    start = start or samples[len(samples) // 10]
    end = end or samples[-1]
    return {v.name.split()[0]: v for v in fit.judge(samples, rate, start, end)}


def test_line_fit_recovers_slope_and_standard_error():
    ts = [i * 10.0 for i in range(361)]
    f = fit.linear_fit(ts, [100 + 50 * t / HOUR for t in ts])
    assert f.slope_per_h == pytest.approx(50)
    assert f.intercept == pytest.approx(100)
    assert f.resid_sd == pytest.approx(0, abs=1e-9)
    assert f.window_h == pytest.approx(1)
    with pytest.raises(ValueError):
        fit.linear_fit([0, 1], [1, 2])
    with pytest.raises(ValueError):
        fit.linear_fit([5, 5, 5], [1, 2, 3])


def test_second_half_is_by_time():
    s = [{"t": float(t)} for t in range(0, 101, 10)]
    assert [x["t"] for x in fit.second_half(s)] == [50, 60, 70, 80, 90, 100]


@pytest.mark.parametrize("seed", range(5))
def test_a_leak_of_100_kib_per_hour_is_caught(seed):
    s = series(rss_per_h=100, anon_per_h=100, seed=seed)
    v = verdicts(s, rate=1000)
    assert not v["RSS"].ok, v["RSS"].detail
    assert not v["anonymous"].ok, v["anonymous"].detail
    assert v["open"].ok and v["threads"].ok


@pytest.mark.parametrize("seed", range(20))
def test_a_flat_noisy_series_passes(seed):
    s = series(seed=seed)
    v = verdicts(s, rate=1000)
    assert all(x.ok for x in v.values()), [x.detail for x in v.values() if not x.ok]


def test_growth_within_the_budget_passes_rss_but_not_anonymous_memory():
    # 40 KiB/h is within RSS's 64 KiB/h at 1,000 msg/s, but anonymous memory may not grow at
    # all, and 20 KiB over the half hour of the fit is well above a few KiB of noise.
    s = series(rss_per_h=40, anon_per_h=40, noise_kib=2, steps=False)
    v = verdicts(s, rate=1000)
    assert v["RSS"].ok, v["RSS"].detail
    assert not v["anonymous"].ok, v["anonymous"].detail


def test_the_rss_budget_scales_with_the_measured_rate():
    s = series(rss_per_h=100, anon_per_h=0, noise_kib=2, steps=False)
    assert not verdicts(s, rate=1000)["RSS"].ok
    assert verdicts(s, rate=2000)["RSS"].ok  # 128 KiB/h allowed at 2,000 msg/s
    assert fit.rss_limit_kib_per_h(500) == 32


def test_warm_up_growth_is_outside_the_fit():
    # 3 MiB in the first five minutes (the dedupe windows and caches filling), flat after.
    s = series()
    for x in s:
        x["rss_kib"] += int(min(x["t"], 300) / 300 * 3072)
        x["anon_kib"] += int(min(x["t"], 300) / 300 * 3072)
    v = verdicts(s)
    assert v["RSS"].ok and v["anonymous"].ok, (v["RSS"].detail, v["anonymous"].detail)


def test_a_leak_that_starts_late_is_caught():
    # Flat for 40 minutes, then 300 KiB/h (a leak that needs some state to build up first).
    s = series(noise_kib=4)
    for x in s:
        extra = max(0.0, x["t"] - 2400) / HOUR * 300
        x["rss_kib"] += int(extra)
        x["anon_kib"] += int(extra)
    v = verdicts(s)
    assert not v["RSS"].ok and not v["anonymous"].ok


def test_an_fd_leak_is_caught():
    s = series(fds=lambda t: 17 + int(t // 600))  # one fd more every 10 minutes
    v = verdicts(s)
    assert not v["open"].ok, v["open"].detail
    assert v["RSS"].ok and v["anonymous"].ok


def test_a_thread_leak_is_caught():
    s = series(threads=lambda t: 5 + (1 if t > 0.9 * HOUR else 0))
    assert not verdicts(s)["threads"].ok


def test_fds_back_to_their_start_pass():
    s = series(fds=lambda t: 17 + (4 if 0.3 * HOUR < t < 0.6 * HOUR else 0))  # clients came and went
    assert verdicts(s)["open"].ok


def test_too_few_samples_fail():
    v = fit.judge([{"t": 0, "rss_kib": 1}, {"t": 10, "rss_kib": 1}], 1000)
    assert len(v) == 1 and not v[0].ok


def test_summary_and_cpu():
    s = series(noise_kib=0, steps=False, rss_per_h=0)
    f = fit.summary(s, "rss_kib")
    assert f["start"] == 8000 and f["end"] == 8000 and f["peak"] == 8000 and f["slope_per_h"] == 0
    assert fit.cpu_percent(s) == pytest.approx(20)
