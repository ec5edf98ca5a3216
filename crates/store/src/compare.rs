//! Two runs side by side: every figure they share, its difference and percentage, and
//! whether the difference is larger than the runs' own spread.

use std::collections::HashMap;

use memfabric_model::Figure;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub a: i64,
    pub b: i64,
    pub rows: Vec<CompareRow>,
    /// Figures only one of the runs has (another mix, node, thread count...).
    pub only_in_a: usize,
    pub only_in_b: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompareRow {
    pub measurement: String,
    pub dims: std::collections::BTreeMap<String, String>,
    pub metric: String,
    pub a: f64,
    pub b: f64,
    /// b - a.
    pub delta: f64,
    /// 100 x (b - a) / a; None when a is 0.
    pub percent: Option<f64>,
    /// The larger of the two runs' sample ranges (max - min): the spread a difference
    /// must exceed to count.
    pub spread: Option<f64>,
    /// The difference is within that spread: not a measured change.
    pub noise: bool,
}

fn key(f: &Figure) -> (String, String, String) {
    (f.measurement.clone(), f.dims_key(), f.metric.clone())
}

fn range(f: &Figure) -> Option<f64> {
    Some(f.max? - f.min?)
}

/// Pairs the figures of run `a` with those of run `b` by measurement, dimensions and
/// metric, in the order of `a`.
pub fn compare(a_id: i64, a: &[Figure], b_id: i64, b: &[Figure]) -> Comparison {
    let by_key: HashMap<_, &Figure> = b.iter().map(|f| (key(f), f)).collect();
    let mut rows = Vec::new();
    for fa in a {
        let Some(fb) = by_key.get(&key(fa)) else { continue };
        let delta = fb.value - fa.value;
        let spread = match (range(fa), range(fb)) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        };
        rows.push(CompareRow {
            measurement: fa.measurement.clone(),
            dims: fa.dims.clone(),
            metric: fa.metric.clone(),
            a: fa.value,
            b: fb.value,
            delta,
            percent: (fa.value != 0.0).then(|| 100.0 * delta / fa.value),
            spread,
            noise: spread.is_some_and(|s| delta.abs() <= s),
        });
    }
    let shared = rows.len();
    Comparison {
        a: a_id,
        b: b_id,
        only_in_a: a.len() - shared,
        only_in_b: b.len().saturating_sub(shared),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fig(node: u32, value: f64, min: f64, max: f64) -> Figure {
        Figure {
            measurement: "latency".into(),
            dims: [("mem_node".to_string(), node.to_string())].into_iter().collect(),
            metric: "latency_ns".into(),
            value,
            min: Some(min),
            max: Some(max),
            cv: None,
            samples: 5,
        }
    }

    #[test]
    fn shared_figures_pair_up_with_delta_percent_and_noise() {
        let a = [
            fig(0, 100.0, 99.0, 101.0),
            fig(1, 200.0, 195.0, 205.0),
            fig(2, 50.0, 50.0, 50.0),
        ];
        let b = [
            fig(1, 150.0, 149.0, 152.0),
            fig(0, 101.0, 100.0, 102.5),
            fig(3, 1.0, 1.0, 1.0),
        ];
        let c = compare(1, &a, 2, &b);
        assert_eq!((c.only_in_a, c.only_in_b), (1, 1));
        assert_eq!(c.rows.len(), 2);
        let n0 = &c.rows[0];
        assert_eq!((n0.a, n0.b, n0.delta), (100.0, 101.0, 1.0));
        assert_eq!(n0.percent, Some(1.0));
        assert!(n0.noise, "1 ns inside a 2.5 ns range");
        let n1 = &c.rows[1];
        assert_eq!(n1.percent, Some(-25.0));
        assert!(!n1.noise);
    }

    proptest! {
        /// A run compared with itself: every figure pairs, every delta is 0 and noise.
        #[test]
        fn a_run_against_itself_is_all_noise(values in prop::collection::vec((1.0f64..1e4, 0.0f64..10.0), 0..200)) {
            let figs: Vec<Figure> = values.iter().enumerate().map(|(i, &(v, r))| fig(i as u32, v, v - r, v + r)).collect();
            let c = compare(1, &figs, 1, &figs);
            prop_assert_eq!(c.rows.len(), figs.len());
            prop_assert!(c.rows.iter().all(|r| r.delta == 0.0 && r.noise && r.percent == Some(0.0)));
        }
    }
}
