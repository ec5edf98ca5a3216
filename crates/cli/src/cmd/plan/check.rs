//! `plan check`: this machine's population, DIMM speeds and NUMA mode
//! against its platform's rules.

use anyhow::Result;
use memfabric_analysis::provision::{check, CheckInput, CheckReport};
use memfabric_topo::{Host, Roots};
use serde::Serialize;

use super::platforms::{load, matching, Loaded};
use crate::args::CheckArgs;
use crate::cmd::theory::{memory_devices, read_topology};
use crate::output::{print_all, Ctx, Status, Usage};
use crate::table::Table;

#[derive(Serialize)]
struct CheckResult<'a> {
    platform_id: &'a str,
    platform_origin: &'a str,
    #[serde(flatten)]
    report: &'a CheckReport,
}

pub fn run(ctx: &Ctx, a: &CheckArgs) -> Result<Status> {
    let topo = read_topology(&a.source.sysfs)?;
    let devices = memory_devices(&topo, &a.source)?;
    let loaded = platform(a)?;
    let report = check(&loaded.platform, &CheckInput::of(&topo, &devices));
    if ctx.json {
        let r = CheckResult {
            platform_id: &loaded.id,
            platform_origin: &loaded.origin,
            report: &report,
        };
        ctx.print_json("plan-check", a.source.is_live().then_some(&topo), &r)?;
    } else {
        print_all(&render(&loaded, &report))?;
    }
    Ok(if report.deviations.is_empty() {
        Status::Ok
    } else {
        Status::MeasurementFailed
    })
}

fn platform(a: &CheckArgs) -> Result<Loaded> {
    if let Some(p) = &a.platform {
        return load(p);
    }
    if !a.source.is_live() {
        return Err(Usage("a saved machine (--sysfs, --smbios, --dmidecode) does not say its CPU model: name its platform with --platform".into()).into());
    }
    let model = Host::read(&Roots::live()).cpu_model.unwrap_or_default();
    matching(&model)?.ok_or_else(|| {
        Usage(format!(
            "no platform file matches this CPU ({}): name one with --platform (`memfabric plan platforms`), or write one (docs/PLAN.md)",
            if model.is_empty() { "model unknown" } else { model.as_str() }
        ))
        .into()
    })
}

pub fn render(l: &Loaded, r: &CheckReport) -> String {
    let mut out = format!(
        "Platform: {} ({}: {})\nNUMA mode: {}\n",
        r.platform,
        l.id,
        l.origin,
        r.numa_mode.as_deref().unwrap_or("not one the platform offers")
    );
    if !r.sockets.is_empty() {
        let mut t = Table::new(&["socket", "DIMMs", "channels", "<DIMMs per channel", "<class"]);
        for s in &r.sockets {
            let per: Vec<String> = s.per_channel.iter().map(u32::to_string).collect();
            t.row(vec![
                s.socket.to_string(),
                s.dimms.to_string(),
                format!("{} of {}", s.channels_used, s.per_channel.len()),
                per.join(" "),
                s.class.name().into(),
            ]);
        }
        out += &format!("\n{}", t.render());
    }
    if r.deviations.is_empty() {
        out += &format!("\nNo deviation from the platform's rules ({}).\n", r.rule);
    } else {
        out += &format!("\n{} deviation(s):\n", r.deviations.len());
        for d in &r.deviations {
            out += &format!(
                "- {}: {} (expected {})\n  fix: {}\n",
                d.what, d.seen, d.expected, d.fix
            );
        }
    }
    for n in &r.not_checked {
        out += &format!("Not checked: {n}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use memfabric_topo::{MemoryDevices, Topology};

    use super::*;

    fn fixture(sys: &str, smbios: &str) -> (Topology, MemoryDevices) {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures");
        let topo = Topology::read(&root.join(sys)).unwrap();
        let mut devices = memfabric_topo::read_memory_devices(&root.join(smbios));
        memfabric_topo::group_dimms(&mut devices.dimms, topo.packages.len());
        (topo, devices)
    }

    #[test]
    fn a_mixed_rome_population_gets_its_fixes() {
        let (topo, devices) = fixture("epyc7601-2s/sys", "smbios/ddr4-2s-mixed");
        let l = load("epyc-7002-2s").unwrap();
        let report = check(&l.platform, &CheckInput::of(&topo, &devices));
        insta::assert_snapshot!("plan_check_rome_mixed", render(&l, &report));
        assert!(report.deviations.iter().any(|d| d.what == "socket 0: DIMM sizes"));
        assert!(report.deviations.iter().any(|d| d.what.ends_with("speed")));
    }
}
