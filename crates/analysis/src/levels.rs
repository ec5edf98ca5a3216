//! Cache levels in a curve of some figure against working-set size: flat stretches
//! (plateaus) separated by steps where the curve climbs (latency) or drops (bandwidth)
//! to the next, slower level. Pure functions: the sweep feeds them its medians.
//!
//! Method, on log2(size) against ln(value) (negated for a falling curve, so every step
//! is a rise):
//! 1. A running median of three removes lone outliers (and keeps a clean step a step);
//!    levels and crossings below are read on this median curve.
//! 2. Candidate steps are runs of consecutive intervals of the median curve, smoothed
//!    once more by Hanning (1/4, 1/2, 1/4) so that a flat pair left by the median does
//!    not cut a rise in two, that each rise faster than 20 % per octave and more than
//!    2.5 robust standard deviations (1.4826 x the median absolute deviation) of the
//!    points around that smoothed curve: slow drift (TLB reach, NUCA distances) and
//!    noise do not start one.
//! 3. A candidate is a step when the level after it is at least [`MIN_STEP_RATIO`]
//!    times the level before it, and more than 3 robust standard deviations of the
//!    points around the smoothed curve on the noisier side. Each level is taken
//!    both near the step (median of up to three points) and over its whole plateau,
//!    whichever gives the smaller step, so a short burst of noise is not a level.
//!    Candidates that fall short are dropped one at a time, the shortest first, and the
//!    rest judged again against their new neighbours. A level needs two points, so no
//!    step is found before the second point or after the second last.
//! 4. The boundary is where the curve crosses halfway (geometrically) between the two
//!    levels: the last point at or below the halfway mark, and the next point.
//!
//! Tolerance: for a curve of ideal steps of at least 1.5x, at least four points and an
//! octave apart and two points from either end, under independent multiplicative noise
//! of up to ±5 % per point, every step is found, none other, and each boundary lies
//! within one point of the true one (in practice on it; the property tests below check
//! it). A flat curve under any noise of up to ±10 % shows no step: two medians of such
//! points are never 1.25x apart. On a real cache the halfway mark falls a little past the
//! capacity: for a random chase over an LRU cache of size C, at about 1.4 C.

/// Which way the curve goes when the working set outgrows a level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Latency: each level is slower, so higher.
    Rises,
    /// Bandwidth: each level is slower, so lower.
    Falls,
}

/// A step between two plateaus, by index into the points.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Step {
    /// The last point at or below the halfway mark.
    pub last_below: usize,
    /// The first point past it.
    pub first_above: usize,
    /// How much slower the next level is (> 1): after / before for a rising curve,
    /// before / after for a falling one.
    pub ratio: f64,
}

/// A flat stretch: points `first..=last`, between the steps.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Plateau {
    pub first: usize,
    pub last: usize,
    /// Median of the values of its points.
    pub median: f64,
}

/// What a curve shows: `steps.len() + 1` plateaus, or nothing for no points.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Levels {
    pub plateaus: Vec<Plateau>,
    pub steps: Vec<Step>,
}

/// Smallest step that counts as a new level: the next level is 25 % slower.
pub const MIN_STEP_RATIO: f64 = 1.25;
/// Smallest rise per octave of an interval inside a step: 20 %.
const MIN_SLOPE_PER_OCTAVE: f64 = 1.2;
/// An interval inside a step rises more than this many robust standard deviations.
const NOISE_SIGMAS: f64 = 2.5;
/// A step rises more than this many robust standard deviations of the scatter of the
/// points around the smoothed curve, on the noisier of the plateaus either side.
const STEP_SIGMAS: f64 = 3.0;

/// Finds the levels of a curve of (size_bytes, value) points. Points must be in
/// strictly increasing size with finite, positive sizes and values; anything else
/// gives no levels at all.
pub fn detect(points: &[(f64, f64)], dir: Direction) -> Levels {
    if points.is_empty() || !valid(points) {
        return Levels::default();
    }
    let x: Vec<f64> = points.iter().map(|p| p.0.log2()).collect();
    let sign = if dir == Direction::Rises { 1.0 } else { -1.0 };
    let y: Vec<f64> = points.iter().map(|p| sign * p.1.ln()).collect();
    let m = median3(&y);
    let z = hanning(&m);
    let runs = prune(&y, &m, &z, rising_runs(&x, &y, &m, &z));
    let mut steps = Vec::with_capacity(runs.len());
    for k in 0..runs.len() {
        let (lower, upper) = edges(&m, &runs, k);
        let last_below = (runs[k].0..=runs[k].1)
            .rev()
            .find(|&i| m[i] <= (lower + upper) / 2.0)
            .unwrap_or(runs[k].0);
        steps.push(Step {
            last_below,
            first_above: last_below + 1,
            ratio: rise(&m, &runs, k).exp(),
        });
    }
    let values: Vec<f64> = points.iter().map(|p| p.1).collect();
    let mut plateaus = Vec::with_capacity(runs.len() + 1);
    let mut first = 0;
    for &(s, e) in runs.iter().chain(std::iter::once(&(points.len() - 1, 0))) {
        plateaus.push(Plateau {
            first,
            last: s,
            median: median(&values[first..=s]),
        });
        first = e;
    }
    Levels { plateaus, steps }
}

fn valid(points: &[(f64, f64)]) -> bool {
    let positive = |v: f64| v.is_finite() && v > 0.0;
    points.iter().all(|p| positive(p.0) && positive(p.1)) && points.windows(2).all(|w| w[0].0 < w[1].0)
}

/// Tukey's running median of three; the ends take the median of the first or last
/// three. It removes lone outliers and keeps a clean step a step.
fn median3(y: &[f64]) -> Vec<f64> {
    let n = y.len();
    if n < 3 {
        return y.to_vec();
    }
    (0..n)
        .map(|i| {
            let c = i.clamp(1, n - 2);
            median(&[y[c - 1], y[c], y[c + 1]])
        })
        .collect()
}

/// Hanning (1/4, 1/2, 1/4): smooths away the flat pairs a running median leaves
/// inside a rising stretch, which would cut one step in two.
fn hanning(m: &[f64]) -> Vec<f64> {
    let n = m.len();
    (0..n)
        .map(|i| match i {
            i if i == 0 || i + 1 == n => m[i],
            i => 0.25 * m[i - 1] + 0.5 * m[i] + 0.25 * m[i + 1],
        })
        .collect()
}

/// Maximal runs of steeply rising intervals of the smoothed curve `z`, as (first
/// point, last point). Noise is measured as the scatter of the points `y` around it.
fn rising_runs(x: &[f64], y: &[f64], m: &[f64], z: &[f64]) -> Vec<(usize, usize)> {
    let sigma = scatter(y, (m, z), 0, y.len() - 1);
    let mut runs = Vec::new();
    let mut start = None;
    for i in 0..z.len() - 1 {
        let threshold = (MIN_SLOPE_PER_OCTAVE.ln() * (x[i + 1] - x[i])).max(NOISE_SIGMAS * sigma);
        if z[i + 1] - z[i] > threshold {
            start.get_or_insert(i);
        } else if let Some(s) = start.take() {
            runs.push((s, i));
        }
    }
    if let Some(s) = start {
        runs.push((s, z.len() - 1));
    }
    runs
}

/// Robust standard deviation (1.4826 x the median absolute deviation) of the points
/// `from..=to` around a smoothed curve: the smaller of that around the median curve
/// `m` (which a noise pattern alternating point by point inflates) and that around its
/// Hanning smoothing `z` (which the points either side of a sharp step inflate).
fn scatter(y: &[f64], (m, z): (&[f64], &[f64]), from: usize, to: usize) -> f64 {
    let around = |c: &[f64]| {
        let d: Vec<f64> = (from..=to).map(|i| (y[i] - c[i]).abs()).collect();
        1.4826 * median(&d)
    };
    around(m).min(around(z))
}

/// Keeps the runs that are steps: trimmed to leave two points on each side, with a
/// rise of at least MIN_STEP_RATIO and of STEP_SIGMAS times the scatter of the points
/// around the smoothed curve on the noisier side. Drops the run that falls shortest
/// first, then judges the rest again.
fn prune(y: &[f64], m: &[f64], z: &[f64], runs: Vec<(usize, usize)>) -> Vec<(usize, usize)> {
    let n = m.len();
    let mut kept: Vec<(usize, usize)> = runs
        .into_iter()
        .map(|(s, e)| (s.max(1), e.min(n.saturating_sub(2))))
        .filter(|&(s, e)| s < e)
        .collect();
    loop {
        let shortest = (0..kept.len())
            .map(|k| {
                let ((b0, b1), (a0, a1)) = spans(n, &kept, k);
                let sigma = scatter(y, (m, z), b0, b1).max(scatter(y, (m, z), a0, a1));
                let need = MIN_STEP_RATIO.ln().max(STEP_SIGMAS * sigma);
                (k, rise(m, &kept, k) - need)
            })
            .filter(|&(_, margin)| margin < 0.0)
            .min_by(|a, b| a.1.total_cmp(&b.1));
        match shortest {
            Some((k, _)) => {
                kept.remove(k);
            }
            None => return kept,
        }
    }
}

/// The plateaus on either side of run k: from the end of the run before (or the first
/// point) to its start, and from its end to the start of the run after (or the last).
fn spans(n: usize, runs: &[(usize, usize)], k: usize) -> ((usize, usize), (usize, usize)) {
    let below_from = if k == 0 { 0 } else { runs[k - 1].1 };
    let above_to = runs.get(k + 1).map_or(n - 1, |r| r.0);
    ((below_from, runs[k].0), (runs[k].1, above_to))
}

/// The levels just before and just after run k: medians of up to three points.
fn edges(m: &[f64], runs: &[(usize, usize)], k: usize) -> (f64, f64) {
    let ((b0, b1), (a0, a1)) = spans(m.len(), runs, k);
    let lower = median(&m[b1.saturating_sub(2).max(b0)..=b1]);
    let upper = median(&m[a0..=(a0 + 2).min(a1)]);
    (lower, upper)
}

/// The log rise of run k: the smaller of the rise between its edges and the rise
/// between the medians of the plateaus on either side.
fn rise(m: &[f64], runs: &[(usize, usize)], k: usize) -> f64 {
    let ((b0, b1), (a0, a1)) = spans(m.len(), runs, k);
    let (lower, upper) = edges(m, runs, k);
    upper.min(median(&m[a0..=a1])) - lower.max(median(&m[b0..=b1]))
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `n` sizes from 4 KiB, `ppo` per octave.
    fn sizes(n: usize, ppo: usize) -> Vec<f64> {
        (0..n)
            .map(|i| 4096.0 * 2f64.powf(i as f64 / ppo as f64))
            .collect()
    }

    /// An ideal step curve: `base` up to and including each position, then `ratio`
    /// times slower, each value scaled by its noise factor.
    fn stepped(
        n: usize,
        ppo: usize,
        steps: &[(usize, f64)],
        base: f64,
        dir: Direction,
        noise: &[f64],
    ) -> Vec<(f64, f64)> {
        sizes(n, ppo)
            .into_iter()
            .enumerate()
            .map(|(i, x)| {
                let slower: f64 = steps.iter().filter(|s| s.0 < i).map(|s| s.1).product();
                let v = if dir == Direction::Rises {
                    base * slower
                } else {
                    base / slower
                };
                (x, v * noise[i % noise.len()])
            })
            .collect()
    }

    /// Step positions (last point before each step): the first at 1 or later, each at
    /// least `spacing` points after the one before, the last two or more before the end.
    fn positions(n: usize, first: usize, spacing: usize, extra: &[usize]) -> Vec<usize> {
        let mut at = first;
        let mut out = Vec::new();
        for &g in extra {
            if at + 3 > n {
                break;
            }
            out.push(at);
            at += spacing + g;
        }
        out
    }

    proptest! {
        #[test]
        fn finds_every_step_within_one_point(
            ppo in 2usize..=8,
            octaves in 5usize..=18,
            first in 1usize..=6,
            extra in prop::collection::vec(0usize..=10, 0..5),
            ratios in prop::collection::vec(1.5f64..8.0, 5),
            base in 0.5f64..500.0,
            falls: bool,
            noise in prop::collection::vec(0.95f64..=1.05, 18 * 8 + 1),
        ) {
            let n = octaves * ppo + 1;
            // Four points and an octave apart: cache levels are further apart still.
            let at = positions(n, first, ppo.max(4), &extra);
            let steps: Vec<(usize, f64)> = at.iter().copied().zip(ratios.iter().copied()).collect();
            let dir = if falls { Direction::Falls } else { Direction::Rises };
            let found = detect(&stepped(n, ppo, &steps, base, dir, &noise), dir);
            prop_assert_eq!(found.steps.len(), steps.len(), "{:?} vs {:?}", found.steps, steps);
            prop_assert_eq!(found.plateaus.len(), steps.len() + 1);
            for (f, (p, r)) in found.steps.iter().zip(&steps) {
                prop_assert!(f.last_below.abs_diff(*p) <= 1, "step at {} found at {}", p, f.last_below);
                prop_assert_eq!(f.first_above, f.last_below + 1);
                prop_assert!((f.ratio / r - 1.0).abs() < 0.11, "ratio {} for {}", f.ratio, r);
            }
        }

        #[test]
        fn flat_noisy_curve_has_no_step(
            n in 1usize..120,
            base in 0.01f64..1e4,
            falls: bool,
            noise in prop::collection::vec(0.9f64..=1.1, 1..120),
        ) {
            let dir = if falls { Direction::Falls } else { Direction::Rises };
            let found = detect(&stepped(n, 4, &[], base, dir, &noise), dir);
            prop_assert!(found.steps.is_empty(), "{:?}", found.steps);
            prop_assert_eq!(found.plateaus.len(), 1);
            prop_assert_eq!((found.plateaus[0].first, found.plateaus[0].last), (0, n - 1));
        }
    }

    /// Latency of a random chase over `size` bytes: each level misses a share of
    /// 1 - capacity / size of what reaches it (a fully associative LRU cache).
    fn chase_ns(size: f64) -> f64 {
        let levels = [(48e3, 1.2), (2e6, 5.0), (32e6, 40.0)];
        let mut ns = 0.0;
        let mut reaching = 1.0;
        for (capacity, hit_ns) in levels {
            let hits = (capacity / size).min(1.0);
            ns += reaching * hits * hit_ns;
            reaching *= 1.0 - hits;
        }
        ns + reaching * 110.0
    }

    #[test]
    fn gradual_transitions_land_just_past_each_capacity() {
        let points: Vec<(f64, f64)> = sizes(4 * 16 + 1, 4)
            .into_iter()
            .map(|x| (x, chase_ns(x)))
            .collect();
        let found = detect(&points, Direction::Rises);
        let at: Vec<f64> = found.steps.iter().map(|s| points[s.last_below].0).collect();
        assert_eq!(at.len(), 3, "{found:?}");
        for (b, c) in at.iter().zip([48e3, 2e6, 32e6]) {
            assert!((1.0..2.0).contains(&(b / c)), "boundary {b} for a cache of {c}");
        }
        let medians: Vec<f64> = found.plateaus.iter().map(|p| p.median).collect();
        assert!(
            (medians[0] - 1.2).abs() < 0.01 && medians[3] > 80.0,
            "{medians:?}"
        );
    }

    #[test]
    fn drift_and_lone_outliers_are_not_levels() {
        // 10 % per octave of drift, one point 3x too slow, one 2x too fast.
        let mut points: Vec<(f64, f64)> = sizes(41, 4)
            .into_iter()
            .enumerate()
            .map(|(i, x)| (x, 50.0 * 1.1f64.powf(i as f64 / 4.0)))
            .collect();
        points[10].1 *= 3.0;
        points[25].1 /= 2.0;
        assert_eq!(detect(&points, Direction::Rises).steps, vec![]);
        assert_eq!(detect(&points, Direction::Falls).steps, vec![]);
    }

    #[test]
    fn refuses_what_is_not_a_curve() {
        assert_eq!(detect(&[], Direction::Rises), Levels::default());
        assert_eq!(
            detect(&[(2.0, 1.0), (1.0, 1.0)], Direction::Rises),
            Levels::default()
        );
        assert_eq!(
            detect(&[(1.0, 0.0), (2.0, 1.0)], Direction::Rises),
            Levels::default()
        );
        assert_eq!(detect(&[(1.0, f64::NAN)], Direction::Falls), Levels::default());
        let one = detect(&[(1.0, 3.0)], Direction::Rises);
        assert_eq!(
            one.plateaus,
            vec![Plateau {
                first: 0,
                last: 0,
                median: 3.0
            }]
        );
    }
}
