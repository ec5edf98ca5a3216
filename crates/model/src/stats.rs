//! Summary statistics over raw samples. Samples are kept in results too, so any
//! figure here can be recomputed by whoever reads the JSON.

use serde::{Deserialize, Serialize};

/// Summary of a set of samples in one unit (the unit is in the owner's field name).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub count: usize,
    pub min: f64,
    pub median: f64,
    pub p99: f64,
    pub max: f64,
    pub mean: f64,
    /// Coefficient of variation: sample standard deviation / mean (0.02 = 2 %).
    pub cv: f64,
}

impl Summary {
    /// Returns None for an empty set or one containing a non-finite value.
    pub fn of(samples: &[f64]) -> Option<Summary> {
        if samples.is_empty() || samples.iter().any(|x| !x.is_finite()) {
            return None;
        }
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let mean = sorted.iter().sum::<f64>() / n as f64;
        Some(Summary {
            count: n,
            min: sorted[0],
            median: median_sorted(&sorted),
            p99: percentile_sorted(&sorted, 99.0),
            max: sorted[n - 1],
            mean,
            cv: coefficient_of_variation(&sorted, mean),
        })
    }
}

fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
    }
}

/// Nearest-rank percentile: the smallest sample with at least p % of samples at or below it.
pub fn percentile_sorted(sorted: &[f64], p: f64) -> f64 {
    let n = sorted.len();
    let rank = ((p / 100.0) * n as f64).ceil() as usize;
    sorted[rank.clamp(1, n) - 1]
}

fn coefficient_of_variation(samples: &[f64], mean: f64) -> f64 {
    if samples.len() < 2 || mean == 0.0 {
        return 0.0;
    }
    let var = samples.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (samples.len() - 1) as f64;
    var.sqrt() / mean.abs()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_values() {
        let s = Summary::of(&[4.0, 1.0, 3.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.max, s.mean), (1.0, 2.5, 4.0, 2.5));
        assert_eq!(s.p99, 4.0);
        assert!((s.cv - 0.516_397_779_494_322).abs() < 1e-12);
        let odd = Summary::of(&[5.0, 1.0, 3.0]).unwrap();
        assert_eq!(odd.median, 3.0);
    }

    #[test]
    fn p99_of_hundred() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(Summary::of(&v).unwrap().p99, 99.0);
    }

    #[test]
    fn rejects_empty_and_nan() {
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[1.0, f64::NAN]).is_none());
    }

    proptest! {
        #[test]
        fn ordered(v in prop::collection::vec(0.0f64..1e6, 1..200)) {
            let s = Summary::of(&v).unwrap();
            prop_assert!(s.min <= s.median && s.median <= s.p99 && s.p99 <= s.max);
            prop_assert!(s.min <= s.mean && s.mean <= s.max * (1.0 + 1e-12));
            prop_assert!(s.cv >= 0.0);
            prop_assert_eq!(s.count, v.len());
        }

        #[test]
        fn constant_has_no_spread(x in 0.1f64..1e6, n in 1usize..50) {
            let s = Summary::of(&vec![x; n]).unwrap();
            prop_assert!(s.cv < 1e-9);
            prop_assert_eq!(s.median, x);
        }

        #[test]
        fn scale_invariant_cv(v in prop::collection::vec(1.0f64..1e3, 2..50), k in 0.5f64..100.0) {
            let a = Summary::of(&v).unwrap();
            let scaled: Vec<f64> = v.iter().map(|x| x * k).collect();
            let b = Summary::of(&scaled).unwrap();
            prop_assert!((a.cv - b.cv).abs() < 1e-9 * (1.0 + a.cv));
        }
    }
}
