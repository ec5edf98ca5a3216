//! `memfabric audit`: what is wrong with this machine's memory configuration.

use std::path::Path;

use anyhow::Result;
use memfabric_analysis::audit::{audit, Settings};
use memfabric_model::{AuditReport, PopulationClass, Severity};
use memfabric_topo::{Roots, Topology};
use serde::Serialize;

use super::theory::{memory_devices, read_topology};
use crate::args::AuditArgs;
use crate::output::{print_all, Ctx, Status, Usage};
use crate::table::Table;

#[derive(Serialize)]
struct AuditResult<'a> {
    #[serde(flatten)]
    report: &'a AuditReport,
    memory_devices: &'a memfabric_topo::MemoryDevices,
    /// With --explain: the rule from expected loss to class, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    class_rule: Option<String>,
}

/// The kernel settings the audit judges, read under the given roots.
fn settings(topo: &Topology, sys: &Path, proc: &Path) -> Settings {
    Settings::new(
        topo,
        memfabric_topo::governors(topo, sys),
        memfabric_topo::numa_balancing(proc),
    )
}

pub fn run(ctx: &Ctx, a: &AuditArgs) -> Result<Status> {
    let mut topo = read_topology(&a.source.sysfs)?;
    topo.memory_devices = memory_devices(&topo, &a.source)?;
    if !Roots::is_live_proc(&a.proc) && !a.proc.is_dir() {
        return Err(Usage(format!("--proc {}: not a directory", a.proc.display())).into());
    }
    let settings = settings(&topo, &a.source.sysfs, &a.proc);
    let report = audit(&topo, &settings);
    if ctx.json {
        let live = a.source.is_live() && Roots::is_live_proc(&a.proc);
        let result = AuditResult {
            report: &report,
            memory_devices: &topo.memory_devices,
            class_rule: a.explain.then(memfabric_analysis::audit::class::rule_text),
        };
        ctx.print_json("audit", live.then_some(&topo), &result)?;
    } else {
        let mut text = render(&report);
        if a.explain {
            text += &format!(
                "\nHow a socket's class is given:\n{}\n",
                memfabric_analysis::audit::class::rule_text()
            );
        }
        print_all(&text)?;
    }
    Ok(Status::Ok)
}

fn severity(s: Severity) -> &'static str {
    match s {
        Severity::Critical => "CRITICAL",
        Severity::Warning => "warning",
        Severity::Info => "info",
    }
}

fn class(c: PopulationClass) -> &'static str {
    match c {
        PopulationClass::Optimal => "optimal",
        PopulationClass::Reduced => "reduced",
        PopulationClass::NotRecommended => "not recommended",
        PopulationClass::Unknown => "unknown",
    }
}

pub fn render(r: &AuditReport) -> String {
    let mut out = String::from("Memory configuration audit\n\nSockets (expected loss: against every listed channel populated at the fastest DIMM's rated speed)\n");
    let mut t = Table::new(&["<socket", "<class", "expected loss", "<how"]);
    for s in &r.sockets {
        t.row(vec![
            s.socket.to_string(),
            class(s.class).into(),
            s.expected_loss
                .map_or("-".into(), |l| format!("{:.0} %", 100.0 * l)),
            s.estimate.clone(),
        ]);
    }
    out += &t.render();
    let count = |s: Severity| r.findings.iter().filter(|f| f.severity == s).count();
    out += &format!(
        "\nFindings: {} critical, {} warning, {} info\n",
        count(Severity::Critical),
        count(Severity::Warning),
        count(Severity::Info)
    );
    for f in &r.findings {
        out += &format!("\n[{}] {}\n  why: {}\n", severity(f.severity), f.title, f.why);
        for e in &f.evidence {
            out += &format!("  - {e}\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfabric_topo::{group_dimms, read_memory_devices, Topology};
    use std::path::Path;

    #[test]
    fn mixed_population_report() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let mut topo = Topology::read(&fixtures.join("epyc7601-2s/sys")).unwrap();
        topo.memory_devices = read_memory_devices(&fixtures.join("smbios/ddr4-2s-mixed"));
        group_dimms(&mut topo.memory_devices.dimms, 2);
        let settings = settings(
            &topo,
            &fixtures.join("epyc7601-2s/sys"),
            &fixtures.join("smbios/proc-untuned"),
        );
        insta::assert_snapshot!(render(&audit(&topo, &settings)));
    }
}
