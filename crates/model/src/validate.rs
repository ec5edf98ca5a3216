//! Whether a document's figures could be a machine's: the rules every document
//! meets before it is stored, whether saved by the command that measured it or
//! ingested from another host (docs/RELIABILITY.md lists them). A node with a
//! broken clock, a corrupted file or a hostile sender cannot make a fleet report
//! judge its peers with figures no memory gives.
//!
//! The rules read the JSON by the units in its names (`_ns`, `_gb_s`, `_bytes`,
//! `_pct`, `_s`) and by the shape of a [`crate::Summary`], so they hold for every
//! kind of result, and a result added later is checked without a rule of its own.

use serde_json::{Map, Value};

/// The largest bandwidth believed where a document records no peak for the path:
/// 10^6 GB/s, about ten times the aggregate L1 bandwidth of the largest CPUs.
pub const MAX_GB_S: f64 = 1e6;
/// Where a cell records its path's theoretical peak, a figure may exceed it (a
/// buffer that fits in a cache) but not by this factor.
pub const PEAK_FACTOR: f64 = 100.0;
/// No memory answers a load faster.
pub const MIN_LATENCY_NS: f64 = 0.1;
/// Nor slower: a second per load is a stalled machine or a corrupt figure.
pub const MAX_LATENCY_NS: f64 = 1e9;
/// A document dated further ahead of the ingesting clock is refused.
pub const MAX_FUTURE_S: u64 = 86_400;

/// The first figure that breaks a rule: where, what it holds, and which rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    /// A JSON path, e.g. `result.latency.cells[0].outcome.latency_ns.median`.
    pub path: String,
    /// The value as the document spells it.
    pub value: String,
    pub rule: String,
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} is {}: {}", self.path, self.value, self.rule)
    }
}

impl std::error::Error for Invalid {}

fn invalid(path: &str, value: &Value, rule: impl Into<String>) -> Invalid {
    let mut value = value.to_string();
    if value.len() > 40 {
        value = format!("{}...", value.chars().take(40).collect::<String>());
    }
    Invalid {
        path: path.into(),
        value,
        rule: rule.into(),
    }
}

/// Checks a whole document (`{started_unix_s, result, ...}`) against the rules;
/// `now_unix_s` is the clock of the host that stores it.
pub fn validate(document: &Value, now_unix_s: u64) -> Result<(), Invalid> {
    if let Some(v) = document.get("started_unix_s") {
        let Some(t) = v.as_u64() else {
            return Err(invalid(
                "started_unix_s",
                v,
                "a time in Unix seconds is a whole number, 0 or more",
            ));
        };
        if t > now_unix_s.saturating_add(MAX_FUTURE_S) {
            return Err(invalid(
                "started_unix_s",
                v,
                format!(
                    "measured on {}, more than a day after this host's clock ({}): the node's clock is wrong",
                    crate::units::utc_date(t),
                    crate::units::utc_date(now_unix_s)
                ),
            ));
        }
    }
    match document.get("result") {
        Some(r) => walk(r, "result", None),
        None => Ok(()),
    }
}

/// The unit a key names, by its suffix.
fn unit(key: &str) -> Option<&'static str> {
    ["_gb_s", "_ns", "_bytes", "_pct", "_s"]
        .into_iter()
        .find(|u| key.ends_with(u))
}

fn is_summary(m: &Map<String, Value>) -> bool {
    ["count", "min", "median", "p99", "max", "mean", "cv"]
        .iter()
        .all(|k| m.contains_key(*k))
}

fn walk(v: &Value, path: &str, peak: Option<f64>) -> Result<(), Invalid> {
    match v {
        Value::Object(m) => object(m, path, peak),
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| walk(x, &format!("{path}[{i}]"), peak)),
        _ => Ok(()),
    }
}

fn object(m: &Map<String, Value>, path: &str, peak: Option<f64>) -> Result<(), Invalid> {
    let peak = m
        .get("efficiency")
        .and_then(|e| e.get("peak_gb_s"))
        .and_then(Value::as_f64)
        .filter(|p| *p > 0.0)
        .or(peak);
    let summaries = m
        .values()
        .filter(|x| x.as_object().is_some_and(is_summary))
        .count();
    for (key, x) in m {
        let here = format!("{path}.{key}");
        if let Some(s) = x.as_object().filter(|s| is_summary(s)) {
            summary(s, &here, unit(key), peak)?;
            if let Some((name, samples)) = samples_of(m, key, summaries) {
                consistent(s, samples, &format!("{path}.{name}"), unit(key), peak)?;
            }
            continue;
        }
        if unit(key).is_some() {
            scalar(x, &here)?;
        }
        walk(x, &here, peak)?;
    }
    Ok(())
}

/// The raw samples beside a summary: `samples_KEY` (`samples_one_way_ns`),
/// `NAME_samples_UNIT` for `NAME_UNIT` (`total_samples_gb_s`), or `samples_UNIT`
/// when the summary is the only one of its object (`latency_ns`, `samples_ns`).
fn samples_of<'a>(m: &'a Map<String, Value>, key: &str, summaries: usize) -> Option<(String, &'a Value)> {
    let u = unit(key)?;
    let name = &key[..key.len() - u.len()];
    let by_name = [format!("samples_{key}"), format!("{name}_samples{u}")];
    if let Some((k, v)) = by_name.iter().find_map(|k| m.get(k).map(|v| (k.clone(), v))) {
        return Some((k, v));
    }
    let by_unit = format!("samples{u}");
    m.get(&by_unit).filter(|_| summaries == 1).map(|v| (by_unit, v))
}

/// A number a unit's field holds: a number, never negative.
fn scalar(x: &Value, path: &str) -> Result<(), Invalid> {
    match x {
        Value::Number(n) if n.as_f64().is_some_and(|f| f >= 0.0) => Ok(()),
        Value::Number(_) => Err(invalid(path, x, "a measured quantity is never negative")),
        Value::String(_) | Value::Bool(_) => Err(invalid(path, x, "a figure is a JSON number")),
        _ => Ok(()),
    }
}

fn number(s: &Map<String, Value>, key: &str, path: &str) -> Result<f64, Invalid> {
    let v = &s[key];
    v.as_f64()
        .filter(|f| f.is_finite())
        .ok_or_else(|| invalid(&format!("{path}.{key}"), v, "a figure is a finite JSON number"))
}

/// The range a figure in `unit` may take: bandwidth above 0 and under the bound,
/// latency from [`MIN_LATENCY_NS`] to [`MAX_LATENCY_NS`], other units 0 or more.
fn in_range(raw: &Value, path: &str, unit: Option<&str>, peak: Option<f64>) -> Result<(), Invalid> {
    let v = raw.as_f64().unwrap_or(f64::NAN);
    let bad = |rule: String| Err(invalid(path, raw, rule));
    match unit {
        Some("_gb_s") => {
            let (bound, why) = match peak {
                Some(p) => (
                    p * PEAK_FACTOR,
                    format!("{PEAK_FACTOR} times the path's peak of {p} GB/s"),
                ),
                None => (MAX_GB_S, format!("{MAX_GB_S:e} GB/s, beyond any machine")),
            };
            if v <= 0.0 {
                return bad("a bandwidth is above 0 GB/s".into());
            }
            if v > bound {
                return bad(format!("a bandwidth above {why}"));
            }
            Ok(())
        }
        Some("_ns") if v < MIN_LATENCY_NS => bad(format!("no memory answers in under {MIN_LATENCY_NS} ns")),
        Some("_ns") if v > MAX_LATENCY_NS => bad(format!(
            "no memory takes over {MAX_LATENCY_NS:e} ns (a second) per load"
        )),
        _ if v < 0.0 => bad("a measured quantity is never negative".into()),
        _ => Ok(()),
    }
}

fn summary(s: &Map<String, Value>, path: &str, unit: Option<&str>, peak: Option<f64>) -> Result<(), Invalid> {
    let count = &s["count"];
    if count.as_u64().is_none_or(|c| c < 1) {
        return Err(invalid(
            &format!("{path}.count"),
            count,
            "a summary counts 1 sample or more",
        ));
    }
    let [min, median, p99, max, mean, cv] =
        ["min", "median", "p99", "max", "mean", "cv"].map(|k| number(s, k, path));
    let (min, median, p99, max, mean, cv) = (min?, median?, p99?, max?, mean?, cv?);
    if cv < 0.0 {
        return Err(invalid(
            &format!("{path}.cv"),
            &s["cv"],
            "a coefficient of variation is 0 or more",
        ));
    }
    for k in ["min", "median", "p99", "max", "mean"] {
        in_range(&s[k], &format!("{path}.{k}"), unit, peak)?;
    }
    let order = [("min", min), ("median", median), ("p99", p99), ("max", max)];
    for w in order.windows(2) {
        if w[0].1 > w[1].1 * (1.0 + 1e-9) {
            let rule = format!(
                "{} {} is above {} {}: a summary's statistics are ordered min <= median <= p99 <= max",
                w[0].0, w[0].1, w[1].0, w[1].1
            );
            return Err(invalid(&format!("{path}.{}", w[0].0), &s[w[0].0], rule));
        }
    }
    if mean < min * (1.0 - 1e-9) || mean > max * (1.0 + 1e-9) {
        return Err(invalid(
            &format!("{path}.mean"),
            &s["mean"],
            "the mean lies between min and max",
        ));
    }
    Ok(())
}

/// The raw samples agree with their summary: as many, the same least and greatest.
fn consistent(
    s: &Map<String, Value>,
    samples: &Value,
    path: &str,
    unit: Option<&str>,
    peak: Option<f64>,
) -> Result<(), Invalid> {
    let Some(items) = samples.as_array() else {
        return Err(invalid(path, samples, "raw samples are a JSON array"));
    };
    let mut values = Vec::with_capacity(items.len());
    for (i, x) in items.iter().enumerate() {
        let here = format!("{path}[{i}]");
        let v = x
            .as_f64()
            .ok_or_else(|| invalid(&here, x, "a sample is a finite JSON number"))?;
        in_range(x, &here, unit, peak)?;
        values.push(v);
    }
    let count = s["count"].as_u64().unwrap_or(0);
    if values.len() as u64 != count {
        let rule = format!("{} samples where the summary counts {count}", values.len());
        return Err(invalid(path, &serde_json::json!(values.len()), rule));
    }
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let near = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12);
    for (k, want) in [("min", lo), ("max", hi)] {
        let got = s[k].as_f64().unwrap_or(f64::NAN);
        if !near(got, want) {
            let rule = format!("the summary's {k} {got} is not the samples' {k} {want}");
            return Err(invalid(path, &serde_json::json!(want), rule));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const NOW: u64 = 1_800_000_000;

    /// A latency cell with one summary and its samples, as `latency` writes it.
    fn doc(summary: Value, samples: Value) -> Value {
        json!({"started_unix_s": NOW, "result": {"cells": [{"cpu": 0, "outcome": {"status": "ok",
            "latency_ns": summary, "samples_ns": samples}}]}})
    }

    fn good() -> (Value, Value) {
        let s = json!({"count": 3, "min": 90.0, "median": 100.0, "p99": 110.0, "max": 110.0, "mean": 100.0, "cv": 0.1});
        (s, json!([90.0, 100.0, 110.0]))
    }

    fn refused(d: &Value) -> String {
        validate(d, NOW).unwrap_err().to_string()
    }

    #[test]
    fn a_document_as_memfabric_writes_it_passes() {
        let (s, x) = good();
        assert_eq!(validate(&doc(s, x), NOW), Ok(()));
    }

    #[test]
    fn each_broken_figure_is_named_with_its_path_value_and_rule() {
        let cell = "result.cells[0].outcome";
        let with = |k: &str, v: Value| {
            let (mut s, x) = good();
            s[k] = v;
            doc(s, x)
        };
        assert_eq!(
            refused(&with("min", json!(-5.0))),
            format!("{cell}.latency_ns.min is -5.0: no memory answers in under 0.1 ns")
        );
        assert_eq!(
            refused(&with("min", json!(0))),
            format!("{cell}.latency_ns.min is 0: no memory answers in under 0.1 ns")
        );
        assert_eq!(
            refused(&with("median", json!("NaN"))),
            format!("{cell}.latency_ns.median is \"NaN\": a figure is a finite JSON number")
        );
        assert_eq!(
            refused(&with("count", json!(-3))),
            format!("{cell}.latency_ns.count is -3: a summary counts 1 sample or more")
        );
        assert_eq!(
            refused(&with("cv", json!(-0.5))),
            format!("{cell}.latency_ns.cv is -0.5: a coefficient of variation is 0 or more")
        );
        assert!(refused(&with("median", json!(500.0))).starts_with(&format!(
            "{cell}.latency_ns.median is 500.0: median 500 is above p99 110"
        )));
        let (s, _) = good();
        assert_eq!(
            refused(&doc(s.clone(), json!([90.0, 100.0]))),
            format!("{cell}.samples_ns is 2: 2 samples where the summary counts 3")
        );
        assert_eq!(
            refused(&doc(s, json!([95.0, 100.0, 110.0]))),
            format!("{cell}.samples_ns is 95.0: the summary's min 90 is not the samples' min 95")
        );
    }

    #[test]
    fn bandwidth_is_above_zero_and_under_its_path_peak_or_any_machine() {
        let cell = |gb: f64, peak: Value| {
            json!({"started_unix_s": NOW, "result": {"cells": [{"efficiency": peak, "outcome": {
                "bandwidth_gb_s": {"count": 1, "min": gb, "median": gb, "p99": gb, "max": gb, "mean": gb, "cv": 0.0},
                "samples_gb_s": [gb]}}]}})
        };
        assert_eq!(validate(&cell(1e4, Value::Null), NOW), Ok(()));
        assert!(
            refused(&cell(1e308, Value::Null)).ends_with("a bandwidth above 1e6 GB/s, beyond any machine")
        );
        assert!(refused(&cell(0.0, Value::Null)).ends_with("a bandwidth is above 0 GB/s"));
        let peak = json!({"peak_gb_s": 50.0, "fraction": 0.5, "basis": "x"});
        assert_eq!(
            validate(&cell(400.0, peak.clone()), NOW),
            Ok(()),
            "a cache-resident buffer"
        );
        assert!(
            refused(&cell(6000.0, peak)).ends_with("a bandwidth above 100 times the path's peak of 50 GB/s")
        );
    }

    #[test]
    fn a_document_from_the_future_and_negative_quantities_are_refused() {
        let mut d = json!({"started_unix_s": 4_102_444_800u64, "result": {}});
        assert_eq!(
            refused(&d),
            "started_unix_s is 4102444800: measured on 2100-01-01, more than a day after this host's clock (2027-01-15): the node's clock is wrong"
        );
        d["started_unix_s"] = json!(NOW + 3600);
        assert_eq!(validate(&d, NOW), Ok(()), "clocks an hour apart");
        let neg = json!({"started_unix_s": NOW, "result": {"size_bytes": -1}});
        assert_eq!(
            refused(&neg),
            "result.size_bytes is -1: a measured quantity is never negative"
        );
        let text = json!({"started_unix_s": NOW, "result": {"min_overlap_pct": "100"}});
        assert_eq!(
            refused(&text),
            "result.min_overlap_pct is \"100\": a figure is a JSON number"
        );
    }
}
