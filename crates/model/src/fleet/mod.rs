//! Many machines' results side by side: what each host's run says about it in a few
//! headline figures and recorded facts ([`FleetFacts`], kept with every stored run),
//! and the fleet report that judges every host against its hardware class
//! ([`judge`]) and lists where a class's configuration drifts.

use std::collections::BTreeMap;

use memfabric_topo::{Fact, HardwareClass};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::{Environment, Figure};

mod headline;
mod judge;

pub use headline::{headlines, Headline};
pub use judge::{
    judge, ClassReport, Drift, DriftValue, FleetHost, FleetReport, HeadlineStats, HostRow, Missing, Outlier,
    Rule,
};

/// What one run tells the fleet report about its host: the hardware class, the
/// settings that explain a difference, the noise guard's flags and the headline
/// figures. Small on purpose: the report reads one of these per host, not the run's
/// whole document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct FleetFacts {
    /// None for documents of memfabric before 0.5 (no platform facts).
    pub class: Option<HardwareClass>,
    /// Installed DIMMs, where SMBIOS says.
    pub dimms: Option<usize>,
    /// The NUMA layout in words ("2 sockets, 4 nodes with CPUs per socket").
    pub numa_mode: Option<String>,
    /// The scheduler's name for the host (Slurm's node name), when run as a job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Settings that can explain a difference, by name (bios_version, kernel, thp, ...).
    pub settings: BTreeMap<String, String>,
    /// One line per measurement the noise guard flagged.
    pub noise: Vec<String>,
    /// Headline figure name -> value.
    pub headlines: BTreeMap<String, f64>,
}

impl FleetFacts {
    /// The facts of a run document: its environment, its figures, and the noise
    /// guard's flags ([`noise_flags`] of the document).
    pub fn of(environment: Option<&Environment>, figures: &[Figure], noise: Vec<String>) -> FleetFacts {
        let mut facts = FleetFacts {
            headlines: headlines(figures),
            noise,
            ..FleetFacts::default()
        };
        let Some(env) = environment else {
            return facts;
        };
        let mut set = |name: &str, v: Option<&String>| {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                facts.settings.insert(name.into(), v.clone());
            }
        };
        facts.node.clone_from(&env.scheduler_node);
        set("kernel", env.kernel.as_ref());
        set("microcode", env.microcode.as_ref());
        set("thp", env.thp_enabled.as_ref());
        set("governor", env.governor.as_ref());
        set("numa_balancing", env.numa_balancing.as_ref());
        if let Some(p) = &env.platform {
            set("bios_version", p.bios_version.known());
            set("bios_vendor", p.bios_vendor.known());
            if let Fact::Known(opts) = &p.kernel_memory_options {
                let opts = if opts.is_empty() {
                    "none".to_string()
                } else {
                    opts.join(" ")
                };
                facts.settings.insert("kernel_memory_options".into(), opts);
            }
            facts.class = Some(p.class.clone());
            facts.dimms = p.dimms.known().map(Vec::len);
            facts.numa_mode = Some(p.numa.described.clone());
        }
        facts
    }
}

/// Every measurement the noise guard flagged, anywhere in a document: each as
/// "cv 7.1 % over the 5.0 % threshold: <first likely cause>".
pub fn noise_flags(document: &Value) -> Vec<String> {
    let mut out = Vec::new();
    walk_noise(document, &mut out);
    out
}

fn walk_noise(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(n) = map.get("noise").filter(|n| n.is_object()) {
                let pct = |k: &str| n[k].as_f64().unwrap_or(f64::NAN) * 100.0;
                let cause = n["likely_causes"][0]
                    .as_str()
                    .unwrap_or("no likely cause recorded");
                out.push(format!(
                    "cv {:.1} % over the {:.1} % threshold: {cause}",
                    pct("cv"),
                    pct("threshold_cv")
                ));
            }
            for (k, child) in map {
                if k != "noise" {
                    walk_noise(child, out);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| walk_noise(i, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn noise_flags_are_found_at_any_depth() {
        let doc = json!({"result": {"cells": [
            {"outcome": {"noise": null}},
            {"outcome": {"noise": {"cv": 0.071, "threshold_cv": 0.05, "likely_causes": ["other load: 1-minute load average 3.00"]}}},
            {"outcome": {"noise": {"cv": 0.2, "threshold_cv": 0.05, "likely_causes": []}}}
        ]}});
        assert_eq!(
            noise_flags(&doc),
            vec![
                "cv 7.1 % over the 5.0 % threshold: other load: 1-minute load average 3.00",
                "cv 20.0 % over the 5.0 % threshold: no likely cause recorded"
            ]
        );
        assert!(noise_flags(&json!({"a": [1, 2, {"b": "noise"}]})).is_empty());
    }
}
