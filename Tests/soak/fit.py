"""The leak verdict of the soaks (`make soak`, Tests/soak/soak.py, and the chaos soak,
Tests/chaos/scen_soak.py): a least-squares line through the second half of a resource series,
and the rules of issue 35. Pure: no I/O, no third-party modules; unit tests in
Tests/integration/test_soak_fit.py.

A sample is a dict with "t" (seconds since the run began) and any of "rss_kib", "anon_kib",
"fds", "threads", "cpu_s" (Tests/soak/procstat.py reads them from /proc).

The rules:

- RSS may grow at most 64 KiB per hour per 1,000 inbound messages a second of the rate
  actually measured (`rss_limit_kib_per_h`). It fails when the fitted slope is above that
  limit *and* the growth the slope implies over the fitted window is above the series' noise
  (below). A slope above the limit that is within the noise is not evidence of anything: with
  a 4 KiB page and allocator steps, a short window's slope can be large by chance.
- Anonymous memory may not grow at all beyond its noise: limit 0, same test.
- The noise of a fit (`Fit.noise`) is the largest of:
    * 3 × the slope's standard error × the window: what a trend of pure chance can reach (a
      three-sigma bound: a flat series fails about 1 time in 700). The textbook standard error
      assumes independent residuals, and memory noise is not independent: an arena grows and
      stays grown for a while, a rotation or a reload moves the level for minutes, and a few
      such level changes in the window can tilt the line far more than the textbook error
      allows. So the residuals' variance in the error is the long-run one, by batch means
      (the usual estimate for correlated series): the residuals are cut into 10 batches of
      consecutive samples, and the variance of the batch means times the batch length stands
      for the variance (for independent residuals it is the same, on average; level changes
      that last minutes make it larger). The larger of the two errors counts;
    * 2 × the residuals' standard deviation: a fitted growth smaller than the spread of the
      points around the line is not believed either, however many points;
    * one page (4 KiB): RSS and RssAnon move in pages.
  A real leak grows linearly with time while both noise terms stay put (the first shrinks as
  the run lengthens), so a longer run catches smaller leaks: an hour at 10 s samples with a
  few KiB of noise catches well under 64 KiB/h.
- Open fds and threads at the end may not be above their start (both taken at quiet moments,
  after the warm-up: the caller's job).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PAGE_KIB = 4.0
RSS_BUDGET_KIB_PER_H_PER_1000 = 64.0  # issue 35: KiB per hour per 1,000 msg/s of load
SIGMAS = 3.0  # the slope's standard errors a chance trend may reach
SPREAD = 2.0  # residual standard deviations a fitted growth must exceed
BATCHES = 10
MIN_FIT_SECONDS = 300  # the shortest fitted window a caller should judge (the chaos soak)


@dataclass
class Fit:
    """y = intercept + slope_per_h × hours, by least squares over `n` points."""

    n: int
    t0: float  # seconds: the window's first sample
    t1: float  # seconds: its last
    slope_per_h: float
    intercept: float  # the fitted value at t0
    se_per_h: float  # the slope's standard error, independent residuals assumed
    resid_sd: float  # the residuals' standard deviation (n - 2 degrees of freedom)
    se_batch_per_h: float = 0.0  # the same from the residuals' batch means (module doc)

    @property
    def se_adj_per_h(self) -> float:
        """The standard error that counts: the larger of the two."""
        return max(self.se_per_h, self.se_batch_per_h)

    @property
    def window_h(self) -> float:
        return (self.t1 - self.t0) / 3600.0

    @property
    def growth(self) -> float:
        """What the line grows over the window."""
        return self.slope_per_h * self.window_h

    def noise(self, page: float = PAGE_KIB) -> float:
        """The growth over the window that the noise alone could explain (module doc)."""
        return max(SIGMAS * self.se_adj_per_h * self.window_h, SPREAD * self.resid_sd, page)


def linear_fit(ts: list[float], ys: list[float]) -> Fit:
    """Least squares of ys over ts (seconds); at least 3 points spanning some time."""
    n = len(ts)
    if n != len(ys) or n < 3:
        raise ValueError(f"a fit needs at least 3 points, got {n}")
    hours = [(t - ts[0]) / 3600.0 for t in ts]
    mx = sum(hours) / n
    my = sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in hours)
    if sxx <= 0:
        raise ValueError("a fit needs points at different times")
    slope = sum((x - mx) * (y - my) for x, y in zip(hours, ys)) / sxx
    intercept = my - slope * mx
    resid = [y - (intercept + slope * x) for x, y in zip(hours, ys)]
    sd = math.sqrt(sum(r * r for r in resid) / (n - 2))
    return Fit(n=n, t0=ts[0], t1=ts[-1], slope_per_h=slope, intercept=intercept,
               se_per_h=sd / math.sqrt(sxx), resid_sd=sd,
               se_batch_per_h=math.sqrt(batch_variance(resid) / sxx))


def batch_variance(resid: list[float], batches: int = BATCHES) -> float:
    """The long-run variance of a series by batch means: `batches` batches of equal length
    (the last samples that do not fill one are left out), the variance of their means times
    their length. 0 when there are fewer than 2 samples per batch."""
    size = len(resid) // batches
    if size < 2:
        return 0.0
    means = [sum(resid[i * size:(i + 1) * size]) / size for i in range(batches)]
    m = sum(means) / batches
    return size * sum((x - m) ** 2 for x in means) / (batches - 1)


def second_half(samples: list[dict]) -> list[dict]:
    """The samples in the second half of the run's time (the first half is warm-up and
    settling: caches, arenas and the store's first rotations fill)."""
    if not samples:
        return []
    mid = (samples[0]["t"] + samples[-1]["t"]) / 2
    return [s for s in samples if s["t"] >= mid]


def fit_key(samples: list[dict], key: str) -> Fit:
    """The line through the second half of `key`."""
    half = [s for s in second_half(samples) if s.get(key) is not None]
    return linear_fit([s["t"] for s in half], [float(s[key]) for s in half])


def rss_limit_kib_per_h(rate_msgs_per_s: float) -> float:
    """The RSS growth allowed: 64 KiB/h per 1,000 msg/s of the measured inbound rate."""
    return RSS_BUDGET_KIB_PER_H_PER_1000 * max(rate_msgs_per_s, 0.0) / 1000.0


@dataclass
class Verdict:
    name: str
    ok: bool
    detail: str


def growth_verdict(name: str, fit: Fit, limit_per_h: float, unit: str = "KiB") -> Verdict:
    """Fails when the slope is above `limit_per_h` and its growth over the window is above
    the noise."""
    noise = fit.noise()
    leak = fit.slope_per_h > limit_per_h and fit.growth > noise
    detail = (f"slope {fit.slope_per_h:+.1f} {unit}/h (± {fit.se_adj_per_h:.1f} s.e.; "
              f"limit {limit_per_h:.1f}), growth over the fitted {fit.window_h * 60:.1f} min {fit.growth:+.1f} {unit} "
              f"(noise {noise:.1f}: 3 s.e. {SIGMAS * fit.se_adj_per_h * fit.window_h:.1f}, "
              f"2 s.d. {SPREAD * fit.resid_sd:.1f}), {fit.n} samples")
    return Verdict(name, not leak, detail)


def not_above_start(name: str, key: str, start: dict, end: dict) -> Verdict:
    ok = end[key] <= start[key]
    return Verdict(name, ok, f"start {start[key]}, end {end[key]}")


def judge(samples: list[dict], rate_msgs_per_s: float, start: dict | None = None,
          end: dict | None = None) -> list[Verdict]:
    """The verdicts of issue 35 over a run's samples: RSS within its budget for the measured
    inbound rate, anonymous memory not growing beyond its noise, and (given quiet `start` and
    `end` samples) open fds and threads not above their start."""
    out = []
    if len([s for s in second_half(samples) if s.get("rss_kib") is not None]) < 3:
        return [Verdict("enough samples for a fit", False, f"{len(samples)} samples")]
    out.append(growth_verdict("RSS growth within 64 KiB/h per 1,000 msg/s", fit_key(samples, "rss_kib"),
                              rss_limit_kib_per_h(rate_msgs_per_s)))
    if all(s.get("anon_kib") is not None for s in second_half(samples)):
        out.append(growth_verdict("anonymous memory not growing beyond its noise", fit_key(samples, "anon_kib"), 0.0))
    if start is not None and end is not None:
        for key, what in (("fds", "open fds"), ("threads", "threads")):
            if key in start and key in end:
                out.append(not_above_start(f"{what} at the end not above the start", key, start, end))
    return out


def summary(samples: list[dict], key: str, fit_samples: list[dict] | None = None) -> dict:
    """start (first sample), end (last), peak, and the fit of the second half of
    `fit_samples` (default: `samples`), for the figures."""
    vals = [s[key] for s in samples if s.get(key) is not None]
    if not vals:
        return {}
    out = {"start": vals[0], "end": vals[-1], "peak": max(vals), "min": min(vals)}
    try:
        f = fit_key(fit_samples if fit_samples is not None else samples, key)
        out.update(slope_per_h=round(f.slope_per_h, 2), se_per_h=round(f.se_adj_per_h, 2),
                   resid_sd=round(f.resid_sd, 2), growth=round(f.growth, 2),
                   noise=round(f.noise(PAGE_KIB if key.endswith("_kib") else 0), 2),
                   fit_n=f.n, fit_minutes=round(f.window_h * 60, 1))
    except ValueError:
        pass
    return out


def cpu_percent(samples: list[dict]) -> float | None:
    """Average CPU over the samples, in % of one core."""
    s = [x for x in samples if x.get("cpu_s") is not None]
    if len(s) < 2 or s[-1]["t"] <= s[0]["t"]:
        return None
    return 100.0 * (s[-1]["cpu_s"] - s[0]["cpu_s"]) / (s[-1]["t"] - s[0]["t"])


def main(argv: list[str]) -> int:
    """python3 Tests/soak/fit.py SAMPLES.jsonl RATE: the verdict of a run's samples again
    (the quiet start and end samples are the lines labelled so)."""
    import json
    import sys

    if len(argv) != 3:
        print("usage: fit.py SAMPLES.jsonl RATE", file=sys.stderr)
        return 2
    rows = [json.loads(line) for line in open(argv[1]) if line.strip()]
    quiet = {r["label"]: r for r in rows if "label" in r}
    samples = [r for r in rows if "label" not in r]
    verdicts = judge(samples, float(argv[2]), quiet.get("start"), quiet.get("end"))
    for v in verdicts:
        print(f"{'ok  ' if v.ok else 'FAIL'} {v.name}: {v.detail}")
    return 0 if all(v.ok for v in verdicts) else 1


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv))
