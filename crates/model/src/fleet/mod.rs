//! Many machines' results side by side: what each host's run says about it in a few
//! headline figures and recorded facts ([`FleetFacts`], kept with every stored run),
//! and the fleet report that judges every host against its hardware class
//! ([`judge`]) and lists where a class's configuration drifts.

use std::collections::BTreeMap;

use memfabric_topo::{Fact, HardwareClass};
use serde::{Deserialize, Serialize};

use crate::{Environment, Figure};

mod headline;
mod judge;

pub use headline::{headlines, Headline};
pub use judge::{
    judge, ClassReport, Conflict, Drift, DriftValue, FleetHost, FleetReport, HeadlineStats, HostRow, Missing,
    Outlier, Rule,
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
    /// guard's flags ([`crate::Document::noise_flags`]).
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

/// What became of one node of a campaign (`fleet run`); stored as its name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeStatus {
    /// Its job was submitted and has not ended.
    Running,
    /// It stored a run.
    Ok,
    /// It stored no run: down, crashed, past its time limit, or no document.
    Failed,
    /// The campaign was stopped before its job ended.
    Cancelled,
}

impl NodeStatus {
    pub const ALL: [NodeStatus; 4] = [
        NodeStatus::Running,
        NodeStatus::Ok,
        NodeStatus::Failed,
        NodeStatus::Cancelled,
    ];

    /// Its name, as shown and as the store keeps it.
    pub fn name(self) -> &'static str {
        match self {
            NodeStatus::Running => "running",
            NodeStatus::Ok => "ok",
            NodeStatus::Failed => "failed",
            NodeStatus::Cancelled => "cancelled",
        }
    }

    /// The status a stored name stands for.
    pub fn from_name(name: &str) -> Option<NodeStatus> {
        NodeStatus::ALL.into_iter().find(|s| s.name() == name)
    }
}

impl std::fmt::Display for NodeStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::NodeStatus;

    #[test]
    fn a_node_status_is_stored_as_its_serde_name() {
        for s in NodeStatus::ALL {
            assert_eq!(serde_json::to_value(s).unwrap(), s.name());
            assert_eq!(NodeStatus::from_name(s.name()), Some(s));
        }
        assert_eq!(NodeStatus::from_name("OK"), None);
    }
}
