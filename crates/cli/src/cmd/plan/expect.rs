//! What the planner expects of a measured figure, printed beside the
//! measurement where this machine's platform is known: its CPU model is named
//! by a platform file's `match`, it has that platform's socket count, and its
//! NUMA nodes per socket are a mode the platform offers.

use memfabric_analysis::provision::{numa_plan, Figure, LinkChoice, NumaPlan};
use memfabric_model::{ConcurrentPattern, ConcurrentReport, Mix, Outcome, StreamReport};
use memfabric_topo::{Host, Roots, Topology};

use super::numa::link_text;
use super::platforms::{matching, Loaded};

/// A measured figure the planner predicts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measured {
    /// `stream --interleave all` on every CPU: Triad over memory interleaved over every socket.
    InterleavedTriad,
    /// `bandwidth --concurrent PATTERN --mix MIX`, all streams' total.
    Concurrent(ConcurrentPattern, Mix),
}

/// The line for this machine, or None where its platform is not known or the
/// planner has no figure for the measurement.
pub fn beside(topo: &Topology, what: Measured, measured_gb_s: f64) -> Option<String> {
    let model = Host::read(&Roots::live()).cpu_model?;
    let loaded = matching(&model).ok()??;
    line(
        &loaded,
        topo.packages.len(),
        topo.cpu_nodes().len(),
        what,
        measured_gb_s,
    )
}

/// For `stream` on every CPU with memory interleaved over every node: its Triad.
pub fn for_stream(r: &StreamReport, topo: &Topology) -> String {
    let all_nodes = r.interleave.as_ref().is_some_and(|i| {
        let mut nodes = i.nodes.clone();
        nodes.sort_unstable();
        nodes == topo.memory_nodes()
    });
    let Outcome::Ok(m) = &r.outcome else {
        return String::new();
    };
    let triad = m.functions.iter().find(|f| f.name == "Triad");
    match triad {
        Some(f) if all_nodes && r.cpus.len() == topo.cpus.len() => {
            beside(topo, Measured::InterleavedTriad, f.best_gb_s).unwrap_or_default()
        }
        _ => String::new(),
    }
}

/// For `bandwidth --concurrent`: the streams' total.
pub fn for_concurrent(r: &ConcurrentReport, topo: &Topology) -> String {
    match &r.outcome {
        Outcome::Ok(m) => beside(
            topo,
            Measured::Concurrent(r.pattern, r.mix.mix),
            m.total_gb_s.median,
        )
        .unwrap_or_default(),
        _ => String::new(),
    }
}

/// The planner's figure for `what` on `l` with this many sockets and CPU
/// nodes, beside the measured one.
pub fn line(l: &Loaded, sockets: usize, nodes: usize, what: Measured, measured_gb_s: f64) -> Option<String> {
    let p = &l.platform;
    if sockets == 0 || sockets != p.sockets as usize || nodes == 0 {
        return None;
    }
    let nps = if nodes == 1 && sockets > 1 {
        0
    } else if nodes.is_multiple_of(sockets) {
        (nodes / sockets) as u32
    } else {
        return None;
    };
    let plan = numa_plan(p, nps, LinkChoice::default(), None).ok()?;
    let f = figure(&plan, what)?;
    let links = plan
        .links
        .as_ref()
        .map_or(String::new(), |k| format!(", {}", link_text(k)));
    Some(format!(
        "Model ({}, {}{links}, every channel at {} MT/s assumed): {:.1} GB/s, {} limit; measured {measured_gb_s:.1} is {:.0} % of it. `memfabric plan numa --platform {} --nps {nps} --explain` shows how.\n",
        p.name,
        plan.mode,
        p.memory.mts[0],
        f.value,
        f.limited_by.map_or("-", |b| b.name()),
        100.0 * measured_gb_s / f.value,
        l.id
    ))
}

fn figure(plan: &NumaPlan, what: Measured) -> Option<&Figure> {
    use ConcurrentPattern::{AllLocal, AllRemote, Pairs};
    match what {
        Measured::InterleavedTriad => plan.interleaved(),
        Measured::Concurrent(AllLocal, Mix::Read) => plan.figure("system_read_gb_s"),
        Measured::Concurrent(AllLocal, Mix::Triad) => plan.figure("system_triad_gb_s"),
        Measured::Concurrent(Pairs | AllRemote, Mix::Read) => plan.figure("all_remote_read_gb_s"),
        Measured::Concurrent(..) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::platforms::load;
    use super::*;

    #[test]
    fn a_genoa_measurement_is_shown_beside_the_model() {
        let l = load("epyc-9004-2s").unwrap();
        let text = line(&l, 2, 2, Measured::InterleavedTriad, 470.0).unwrap();
        assert!(
            text.contains("479.0 GB/s, socket links limit; measured 470.0 is 98 % of it"),
            "{text}"
        );
        assert!(text.contains("NPS1, 4 xGMI x16 at 32 Gbit/s"), "{text}");
        let nps0 = line(&l, 2, 1, Measured::InterleavedTriad, 470.0).unwrap();
        assert!(nps0.contains("NPS0") && nps0.contains("--nps 0"), "{nps0}");
        let local = line(
            &l,
            2,
            8,
            Measured::Concurrent(ConcurrentPattern::AllLocal, Mix::Read),
            700.0,
        )
        .unwrap();
        assert!(
            local.contains("NPS4") && local.contains("740.0 GB/s, memory channels limit"),
            "{local}"
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn nothing_where_the_machine_is_not_the_platform_or_no_figure_applies() {
        let l = load("epyc-9004-2s").unwrap();
        assert_eq!(
            line(&l, 1, 1, Measured::InterleavedTriad, 1.0),
            None,
            "one socket"
        );
        assert_eq!(
            line(&l, 2, 6, Measured::InterleavedTriad, 1.0),
            None,
            "NPS3 is not offered"
        );
        let copy = Measured::Concurrent(ConcurrentPattern::AllLocal, Mix::Copy);
        assert_eq!(line(&l, 2, 2, copy, 1.0), None, "no copy figure");
        let remote = Measured::Concurrent(ConcurrentPattern::AllRemote, Mix::Read);
        assert_eq!(
            line(&l, 2, 8, remote, 1.0),
            None,
            "NPS4: the next node is on the same socket"
        );
    }
}
