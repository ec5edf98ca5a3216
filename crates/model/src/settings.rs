//! How two results were taken, side by side: the settings a comparison must name
//! before its differences (a buffer size, huge pages, thread counts, the kernel,
//! THP or the governor), since those differences are then the method's, not the
//! machine's.

use serde_json::Value;

/// One setting whose value differs between two documents.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SettingDiff {
    /// `result.size_bytes`, `result.latency.size_bytes`, `environment.thp_enabled`.
    pub setting: String,
    pub a: String,
    pub b: String,
}

/// Fields that change from run to run by design, or hold figures, not settings.
const NOT_SETTINGS: [&str; 8] = [
    "seed",
    "firmware",
    "outcome",
    "topology",
    "steps",
    "placement",
    "efficiency",
    "dram_counting",
];

/// The machine settings that change a figure without the memory changing.
const ENVIRONMENT: [&str; 7] = [
    "kernel",
    "thp_enabled",
    "governor",
    "numa_balancing",
    "smt_active",
    "cpus_allowed",
    "microcode",
];

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "none".into(),
        v => v.to_string(),
    }
}

/// A setting: a scalar, or a list of scalars (thread counts, nodes).
fn is_setting(v: &Value) -> bool {
    match v {
        Value::Array(a) => a.iter().all(|x| !x.is_object() && !x.is_array()),
        Value::Object(_) => false,
        _ => true,
    }
}

/// The settings of a result, two levels deep (a `run` document's parts are one
/// level down), as (path, value).
fn settings(v: &Value, path: &str, depth: usize, out: &mut Vec<(String, String)>) {
    let Value::Object(m) = v else { return };
    for (k, x) in m {
        if NOT_SETTINGS.contains(&k.as_str()) {
            continue;
        }
        let here = format!("{path}.{k}");
        if is_setting(x) {
            out.push((here, text(x)));
        } else if depth > 0 && x.is_object() {
            settings(x, &here, depth - 1, out);
        }
    }
}

/// Every setting that differs between two documents (as `--json` prints them),
/// in document order: those of the result, then the machine's.
pub fn differences(a: &Value, b: &Value) -> Vec<SettingDiff> {
    let of = |d: &Value| {
        let mut out = Vec::new();
        settings(&d["result"], "result", 1, &mut out);
        for k in ENVIRONMENT {
            if let Some(v) = d["environment"].get(k) {
                out.push((format!("environment.{k}"), text(v)));
            }
        }
        out
    };
    let (sa, sb) = (of(a), of(b));
    sa.iter()
        .filter_map(|(k, va)| {
            let vb = sb.iter().find(|(kb, _)| kb == k).map(|(_, v)| v)?;
            (va != vb).then(|| SettingDiff {
                setting: k.clone(),
                a: va.clone(),
                b: vb.clone(),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn settings_that_differ_are_named_and_figures_and_seeds_are_not() {
        let a = json!({"result": {"size_bytes": 65536, "huge_pages": "off", "seed": 1, "thread_counts": [1, 2],
            "cells": [{"outcome": {"latency_ns": 1.0}}]}, "environment": {"thp_enabled": "madvise", "kernel": "6.1"}});
        let b = json!({"result": {"size_bytes": 131072, "huge_pages": "thp", "seed": 2, "thread_counts": [1, 2],
            "cells": [{"outcome": {"latency_ns": 9.0}}]}, "environment": {"thp_enabled": "always", "kernel": "6.1"}});
        let d = differences(&a, &b);
        let names: Vec<&str> = d.iter().map(|x| x.setting.as_str()).collect();
        assert_eq!(
            names,
            [
                "result.huge_pages",
                "result.size_bytes",
                "environment.thp_enabled"
            ]
        );
        assert_eq!((d[1].a.as_str(), d[1].b.as_str()), ("65536", "131072"));
        assert!(differences(&a, &a).is_empty());
        let run = |size: u64| json!({"result": {"suite": "quick", "latency": {"size_bytes": size}}});
        assert_eq!(
            differences(&run(1), &run(2))[0].setting,
            "result.latency.size_bytes"
        );
    }
}
