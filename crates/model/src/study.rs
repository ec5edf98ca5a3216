//! Several runs side by side (`compare A B C ...`, a configuration study): every
//! figure all of them share, each run's value, its ratio to the first run, and
//! whether its difference from the first is inside the two runs' own spread.

use std::collections::HashMap;

use crate::Figure;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Study {
    /// In the order given; the first is the baseline of every ratio.
    pub runs: Vec<StudyRun>,
    pub rows: Vec<StudyRow>,
    /// The first run's figures that some other run lacks (another mix, node count...).
    pub not_in_every_run: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyRun {
    pub id: i64,
    pub label: Option<String>,
}

impl StudyRun {
    /// "#3 nps4" or "#3".
    pub fn name(&self) -> String {
        match &self.label {
            Some(l) => format!("#{} {l}", self.id),
            None => format!("#{}", self.id),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StudyRow {
    pub measurement: String,
    pub dims: std::collections::BTreeMap<String, String>,
    pub metric: String,
    /// One per run, in the order of `runs`.
    pub values: Vec<f64>,
    /// value / the first run's value; None where the first is 0.
    pub ratios: Vec<Option<f64>>,
    /// The difference from the first run is within the larger of the two runs'
    /// sample ranges: not a measured change. Always true for the first run.
    pub noise: Vec<bool>,
}

fn key(f: &Figure) -> (String, String, String) {
    (f.measurement.clone(), f.dims_key(), f.metric.clone())
}

fn range(f: &Figure) -> Option<f64> {
    Some(f.max? - f.min?)
}

/// Figures shared by every run, in the order of the first run's.
pub fn study(runs: &[(StudyRun, Vec<Figure>)]) -> Study {
    let Some((_, first)) = runs.first() else {
        return Study {
            runs: Vec::new(),
            rows: Vec::new(),
            not_in_every_run: 0,
        };
    };
    let maps: Vec<HashMap<_, &Figure>> = runs
        .iter()
        .map(|(_, figs)| figs.iter().map(|f| (key(f), f)).collect())
        .collect();
    let mut rows = Vec::new();
    for f0 in first {
        let k = key(f0);
        let Some(found) = maps
            .iter()
            .map(|m| m.get(&k).copied())
            .collect::<Option<Vec<&Figure>>>()
        else {
            continue;
        };
        let noise = found
            .iter()
            .map(|f| {
                let spread = match (range(f0), range(f)) {
                    (Some(x), Some(y)) => Some(x.max(y)),
                    (x, y) => x.or(y),
                };
                spread.is_some_and(|s| (f.value - f0.value).abs() <= s) || f.value == f0.value
            })
            .collect();
        rows.push(StudyRow {
            measurement: f0.measurement.clone(),
            dims: f0.dims.clone(),
            metric: f0.metric.clone(),
            values: found.iter().map(|f| f.value).collect(),
            ratios: found
                .iter()
                .map(|f| (f0.value != 0.0).then(|| f.value / f0.value))
                .collect(),
            noise,
        });
    }
    Study {
        runs: runs.iter().map(|(r, _)| r.clone()).collect(),
        not_in_every_run: first.len() - rows.len(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fig(node: u32, value: f64, spread: f64) -> Figure {
        Figure {
            measurement: "stream".into(),
            dims: [("node".to_string(), node.to_string())].into_iter().collect(),
            metric: "bandwidth_gb_s".into(),
            value,
            min: Some(value - spread),
            max: Some(value + spread),
            cv: None,
            samples: 5,
        }
    }

    fn run(id: i64, figs: Vec<Figure>) -> (StudyRun, Vec<Figure>) {
        (
            StudyRun {
                id,
                label: Some(format!("nps{id}")),
            },
            figs,
        )
    }

    #[test]
    fn three_runs_give_values_ratios_and_noise_against_the_first() {
        let s = study(&[
            run(1, vec![fig(0, 100.0, 1.0), fig(1, 50.0, 1.0)]),
            run(2, vec![fig(0, 120.0, 1.0), fig(1, 50.5, 1.0)]),
            run(4, vec![fig(0, 90.0, 1.0)]),
        ]);
        assert_eq!(s.rows.len(), 1, "node 1 is missing from run 4");
        assert_eq!(s.not_in_every_run, 1);
        let r = &s.rows[0];
        assert_eq!(r.values, [100.0, 120.0, 90.0]);
        assert_eq!(r.ratios, [Some(1.0), Some(1.2), Some(0.9)]);
        assert_eq!(r.noise, [true, false, false]);
        assert_eq!(s.runs[2].name(), "#4 nps4");
    }

    proptest! {
        /// The same run repeated: every ratio is 1 and every difference noise.
        #[test]
        fn a_run_repeated_is_all_ones(values in prop::collection::vec(1.0f64..1e4, 1..50), n in 2usize..6) {
            let figs: Vec<Figure> = values.iter().enumerate().map(|(i, &v)| fig(i as u32, v, 0.0)).collect();
            let runs: Vec<_> = (0..n as i64).map(|i| run(i, figs.clone())).collect();
            let s = study(&runs);
            prop_assert_eq!(s.rows.len(), figs.len());
            prop_assert!(s.rows.iter().all(|r| r.ratios.iter().all(|x| *x == Some(1.0)) && r.noise.iter().all(|x| *x)));
        }
    }
}
