//! `plan population`: the DIMM populations that reach a capacity, the
//! recommendation first.

use anyhow::Result;
use memfabric_analysis::provision::population::trim;
use memfabric_analysis::provision::{plan_population, Candidate, PopulationAsk, PopulationPlan, Ras};
use memfabric_report::{render_population, PlanPoint};
use serde::Serialize;

use super::platforms::{load, Loaded};
use super::{gb, usage};
use crate::args::{PopulationArgs, RasArg};
use crate::cmd::helpers::write_atomically;
use crate::output::{print_all, Ctx, Status};
use crate::table::Table;

/// Rows printed unless --all.
const SHOWN: usize = 12;

#[derive(Serialize)]
struct PopulationResult<'a> {
    platform_id: &'a str,
    platform_origin: &'a str,
    sources: &'a [String],
    #[serde(flatten)]
    plan: &'a PopulationPlan,
}

pub fn run(ctx: &Ctx, a: &PopulationArgs) -> Result<Status> {
    let loaded = load(&a.platform)?;
    let ask = PopulationAsk {
        capacity_gib: a.capacity,
        ras: ras(a.ras),
        dimm_sizes_gib: a.dimm_sizes.as_ref().map(|d| d.0.clone()),
    };
    let plan = plan_population(&loaded.platform, &ask).map_err(usage)?;
    if let Some(path) = &a.html {
        write_atomically(path, &html(&loaded, &plan))?;
    }
    if ctx.json {
        let r = PopulationResult {
            platform_id: &loaded.id,
            platform_origin: &loaded.origin,
            sources: &loaded.platform.sources,
            plan: &plan,
        };
        ctx.print_json("plan-population", None, &r)?;
    } else {
        print_all(&render(&loaded, &plan, a.explain, a.all))?;
    }
    Ok(Status::Ok)
}

pub fn ras(r: RasArg) -> Ras {
    match r {
        RasArg::None => Ras::None,
        RasArg::Sparing => Ras::Sparing,
        RasArg::Lockstep => Ras::Lockstep,
        RasArg::Mirroring => Ras::Mirroring,
    }
}

fn describe(l: &Loaded, c: &Candidate) -> String {
    if c.dimms_per_socket == 0 {
        format!(
            "{} GiB {} per socket (soldered)",
            c.dimm_gib, l.platform.memory.kind
        )
    } else {
        format!(
            "{} x {} GiB {} per socket",
            c.dimms_per_socket, c.dimm_gib, l.platform.memory.kind
        )
    }
}

pub fn render(l: &Loaded, p: &PopulationPlan, explain: bool, all: bool) -> String {
    let sockets = l.platform.sockets;
    let mut out = format!(
        "Platform: {} ({}: {})\nAsked: {} GiB usable over {sockets} socket(s), RAS {}\n\n",
        p.platform,
        l.id,
        l.origin,
        trim(p.capacity_gib),
        p.ras.name()
    );
    let best = &p.candidates[0];
    out += &format!(
        "Recommended: {}: {} GiB usable of {} installed, {}, {} of {} channels at {} MT/s\n  expected Triad {}; {:.1} % below every channel populated at {} MT/s ({:.1} GB/s)\n",
        describe(l, best),
        trim(best.usable_gib),
        best.installed_gib,
        best.class.name(),
        best.channels_used,
        l.platform.memory.channels_per_socket,
        best.mt_s,
        best
            .expected_triad_gb_s
            .map_or("not modelled (see the note)".to_string(), |t| format!("{t:.1} GB/s")),
        best.loss_pct,
        l.platform.memory.mts[0],
        p.best_gb_s
    );
    for n in &best.notes {
        out += &format!("  note: {n}\n");
    }
    let shown = if all {
        p.candidates.len()
    } else {
        SHOWN.min(p.candidates.len())
    };
    out += &format!("\n{}", table(&p.candidates[..shown]));
    if shown < p.candidates.len() {
        out += &format!(
            "{shown} of {} populations shown; --all for every one.\n",
            p.candidates.len()
        );
    }
    out += &format!(
        "GB/s are all sockets'. Triad = effective x {:.2}; class by the {} rule{}.\n",
        p.triad_efficiency,
        p.rule,
        if explain {
            ""
        } else {
            " (--explain says what it is)"
        }
    );
    if explain {
        out += &explanation(l, p);
    }
    out
}

fn table(candidates: &[Candidate]) -> String {
    let mut t = Table::new(&[
        "DIMMs/socket",
        "GiB each",
        "channels",
        "MT/s",
        "<class",
        "usable GiB",
        "peak GB/s",
        "effective GB/s",
        "loss %",
        "Triad GB/s",
    ]);
    for c in candidates {
        t.row(vec![
            if c.dimms_per_socket == 0 {
                "soldered".into()
            } else {
                c.dimms_per_socket.to_string()
            },
            c.dimm_gib.to_string(),
            c.channels_used.to_string(),
            c.mt_s.to_string(),
            c.class.name().into(),
            trim(c.usable_gib),
            format!("{:.1}", c.peak_gb_s),
            format!("{:.1}", c.effective_gb_s),
            format!("{:.1}", c.loss_pct),
            gb(c.expected_triad_gb_s),
        ]);
    }
    t.render()
}

fn explanation(l: &Loaded, p: &PopulationPlan) -> String {
    let mut out = format!("\nRule: {}\n", p.rule_text);
    let m = &l.platform.memory;
    let classes: Vec<String> = memfabric_analysis::provision::population::counts_by_class(&l.platform)
        .iter()
        .map(|(c, ns)| {
            let ns: Vec<String> = ns.iter().map(u32::to_string).collect();
            format!("{} at {}", c.name(), ns.join(", "))
        })
        .collect();
    out += &format!(
        "On {} ({} channels per socket in {} groups, up to {} DIMMs per channel), DIMMs per socket: {}.\n",
        l.platform.name,
        m.channels_per_socket,
        m.groups,
        l.platform.max_dimms_per_channel(),
        classes.join("; ")
    );
    out +=
        "\nBandwidth: DIMMs are placed round-robin over the channel groups (the vendors' population order); \
memory is spread evenly over the DIMMs, so a channel carries its share of the DIMMs' traffic and the busiest \
channel sets the pace: effective = channel GB/s x DIMMs / most DIMMs on one channel (every channel alike: \
channels x channel GB/s, the peak). The speed is the platform's for the most DIMMs on one channel. \
Loss is against every channel with one DIMM at the top speed.\n";
    out += "RAS: mirroring makes half usable and writes twice (Triad x 0.75: 2 reads + 2 writes for 2 + 1); \
sparing holds back ranks (bandwidth unchanged); lockstep pairs channels (its cost only where a source publishes it).\n";
    out += &format!(
        "Triad efficiency {:.2}: stated in the platform file (or the default, from triad-like mixes reaching 75-80 % of the DRAM peak).\n",
        p.triad_efficiency
    );
    out += "\nSources:\n";
    for s in &l.platform.sources {
        out += &format!("  - {s}\n");
    }
    out
}

fn html(l: &Loaded, p: &PopulationPlan) -> String {
    let points: Vec<PlanPoint> = p
        .candidates
        .iter()
        .enumerate()
        .map(|(i, c)| PlanPoint {
            label: describe(l, c),
            usable_gib: c.usable_gib,
            gb_s: c.expected_triad_gb_s.unwrap_or(c.effective_gb_s),
            class: c.class.name().into(),
            loss_pct: c.loss_pct,
            recommended: i == 0,
        })
        .collect();
    let title = format!("memfabric plan: {} GiB on {}", trim(p.capacity_gib), p.platform);
    let about = format!(
        "Every population of one DIMM size that reaches {} GiB usable with RAS {}: expected Triad (GB/s, all sockets; effective peak where RAS makes Triad unknown) against usable capacity. Class by the {} rule. A model, not a measurement.",
        trim(p.capacity_gib),
        p.ras.name(),
        p.rule
    );
    render_population(&title, &about, &points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_on_the_first_screen() {
        let l = load("epyc-9004-2s").unwrap();
        let ask = PopulationAsk {
            capacity_gib: 1024.0,
            ras: Ras::None,
            dimm_sizes_gib: None,
        };
        let plan = plan_population(&l.platform, &ask).unwrap();
        let text = render(&l, &plan, true, false);
        insta::assert_snapshot!("plan_population_genoa_1tib", text);
        let first: Vec<&str> = text.lines().take(5).collect();
        assert!(
            first.iter().any(|l| l.starts_with("Recommended: 12 x 48 GiB")),
            "{first:?}"
        );
        insta::assert_snapshot!("plan_population_genoa_1tib_html", html(&l, &plan));
    }
}
