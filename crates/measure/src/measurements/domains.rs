//! Per-domain bandwidth ceilings: what one L3 domain (a CCX or CCD, a sub-NUMA cluster,
//! a socket) draws alone, and how the total grows as domains are added one by one.
//! A domain's link to the rest of the chip (AMD's GMI, a mesh stop) shows as a ceiling
//! that one domain hits long before memory does.

use memfabric_model::{DomainBandwidth, DomainScalingReport, Mix, MixInfo};

use crate::bandwidth::{self, KernelOptions};
use crate::monitor::DramCounters;
use crate::observer::Observer;
use crate::team::Member;

/// One L3 domain: its index in the topology and the threads that run in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DomainSpec {
    pub index: usize,
    pub members: Vec<Member>,
}

#[derive(Debug, Clone)]
pub struct DomainPlan {
    pub mix: Mix,
    pub domains: Vec<DomainSpec>,
    pub kernel: KernelOptions,
    pub fclk_mhz: Option<f64>,
}

/// Measures each domain alone, then the cumulative sets; with `dram`, each step's
/// timed samples are also counted by the memory controllers.
pub fn run(plan: &DomainPlan, dram: Option<&DramCounters>, obs: &dyn Observer) -> DomainScalingReport {
    let n = plan.domains.len();
    obs.begin("per-domain bandwidth", 2 * n as u64);
    let one = |set: &[&DomainSpec], label: String| {
        let members: Vec<Member> = set.iter().flat_map(|d| d.members.iter().copied()).collect();
        let outcome = bandwidth::measure(plan.mix, &members, &plan.kernel, dram, obs);
        obs.advance(&label);
        let bytes_per_fclk = match (&outcome, plan.fclk_mhz) {
            (memfabric_model::Outcome::Ok(m), Some(f)) => Some(m.bandwidth_gb_s.median * 1e3 / f),
            _ => None,
        };
        DomainBandwidth {
            domains: set.iter().map(|d| d.index).collect(),
            cpus: members.iter().map(|m| m.cpu).collect(),
            mem_nodes: members.iter().map(|m| m.mem_node).collect(),
            outcome,
            bytes_per_fclk,
            efficiency: None,
        }
    };
    let alone = plan
        .domains
        .iter()
        .map(|d| one(&[d], format!("L3 domain {} alone", d.index)))
        .collect();
    let cumulative = (1..=n)
        .map(|k| {
            let set: Vec<&DomainSpec> = plan.domains[..k].iter().collect();
            one(&set, format!("{k} of {n} L3 domains together"))
        })
        .collect();
    obs.finish();
    DomainScalingReport {
        mix: MixInfo::of(plan.mix),
        kernel: plan.kernel.isa.name().into(),
        huge_pages: plan.kernel.huge_pages,
        array_bytes_per_thread: plan.kernel.array_bytes,
        fclk_mhz: plan.fclk_mhz,
        alone,
        cumulative,
        dram_counting: Default::default(),
        peak_unknown: None,
    }
}

/// A per-domain plan with its counter source open.
pub struct DomainsReady {
    pub checked: crate::measurement::Checked<DomainPlan>,
    counters: Option<DramCounters>,
    counting: memfabric_model::DramCounting,
}

/// `memfabric bandwidth --per-domain`.
pub struct Domains;

impl crate::measurement::Measurement for Domains {
    type Options = crate::measurement::Request<(crate::plan::DomainOptions, crate::monitor::DramSource)>;
    type Plan = DomainsReady;
    type Report = DomainScalingReport;

    fn plan(m: &crate::plan::Machine, o: &Self::Options) -> Result<Self::Plan, crate::plan::PlanError> {
        let checked = o.check(|sel, (opt, _)| crate::plan::domain_plan(m, sel, opt))?;
        let (counters, counting) = o.options.1.open();
        Ok(DomainsReady {
            checked,
            counters,
            counting,
        })
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> DomainScalingReport {
        run(&p.checked.plan, p.counters.as_ref(), obs)
    }

    fn enrich(r: &mut DomainScalingReport, p: &Self::Plan, m: &crate::plan::Machine) {
        r.dram_counting = crate::monitor::finish_counting(p.counting.clone(), p.counters.as_ref());
        let conditions = m.conditions();
        memfabric_analysis::noise::annotate_domains(r, m.topo, &conditions, p.checked.threshold_cv);
        crate::efficiency::annotate_domains(r, m.topo, p.checked.memory_peak.as_ref());
    }
}
