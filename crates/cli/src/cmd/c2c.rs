//! `memfabric c2c`: core-to-core latency matrices, per handoff mode and line offset.

use anyhow::Result;
use memfabric_measure::c2c::{C2cOptions, CoreToCore};
use memfabric_measure::plan::Selection;
use memfabric_measure::Request;
use memfabric_model::{C2cMatrix, C2cMode, C2cReport, Outcome};
use memfabric_topo::{format_cpulist, Topology};

use super::common;
use crate::args::{C2cArgs, C2cModeArg};
use crate::output::{this_machine, Ctx, Status};
use crate::table::Table;

pub fn run(ctx: &Ctx, a: &C2cArgs) -> Result<Status> {
    let topo = this_machine()?;
    let report = measure(ctx, &topo, a)?;
    ctx.conclude(&topo, report, render)
}

pub fn measure(ctx: &Ctx, topo: &Topology, a: &C2cArgs) -> Result<C2cReport> {
    let modes = match a.mode {
        C2cModeArg::Cas => vec![C2cMode::Cas],
        C2cModeArg::Pingpong => vec![C2cMode::Pingpong],
        C2cModeArg::All => C2cMode::ALL.to_vec(),
    };
    let options = C2cOptions {
        cpus: a.cpus.as_ref().map(|l| l.0.clone()),
        modes,
        offsets_bytes: a.offsets.0.clone(),
        samples: a.samples,
        round_trips: a.iterations,
    };
    let request = Request {
        options,
        selection: Selection::default(),
        cv_threshold_pct: a.cv_threshold,
        memory_peak: None,
    };
    common::measure::<CoreToCore>(ctx, topo, &request)
}

pub fn render(r: &C2cReport) -> String {
    let mut out = format!(
        "Core-to-core latency: CPUs {}, {} samples of {} round trips per pair ({} warm-up sample discarded)\n\
         One-way ns = round trip / 2 (core-to-core-latency's figure), median per pair.\n\
         Rows: first CPU (times; the line's page is on its node). Columns: second CPU (answers).\n",
        format_cpulist(&r.cpus),
        r.samples,
        r.round_trips_per_sample,
        r.warmup_samples,
    );
    for m in &r.matrices {
        out += "\n";
        out += &matrix(m, &r.cpus);
    }
    out += &pages(r);
    out
}

/// One mode and offset: the matrix, the class summary, the mean, then what went wrong.
fn matrix(m: &C2cMatrix, cpus: &[u32]) -> String {
    let mut out = format!(
        "{}: {}; line at byte {} of its page\n",
        m.mode.name(),
        m.mode.describe(),
        m.offset_bytes
    );
    let mut header = vec!["<first \\ second".to_string()];
    header.extend(cpus.iter().map(u32::to_string));
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&refs);
    for &a in cpus {
        let mut row = vec![a.to_string()];
        row.extend(cpus.iter().map(|&b| {
            m.pairs
                .iter()
                .find(|p| p.first_cpu == a && p.second_cpu == b)
                .map_or_else(
                    || "-".to_string(),
                    |p| common::cell_text(&p.outcome, |x| format!("{:.1}", x.one_way_ns.median)),
                )
        }));
        t.row(row);
    }
    out += &t.render();
    if !m.classes.is_empty() {
        let mut c = Table::new(&[
            "<class (pair medians)",
            "pairs",
            "mean ns",
            "median ns",
            "min ns",
            "max ns",
        ]);
        for s in &m.classes {
            let x = &s.pair_medians_ns;
            c.row(vec![
                s.class.describe().to_string(),
                x.count.to_string(),
                format!("{:.1}", x.mean),
                format!("{:.1}", x.median),
                format!("{:.1}", x.min),
                format!("{:.1}", x.max),
            ]);
        }
        out += &c.render();
    }
    if let Some(mean) = m.mean_one_way_ns {
        out += &format!("Mean of all samples: {mean:.1} ns (core-to-core-latency's \"Mean latency\")\n");
    }
    out += &noise_line(m);
    out += &common::problems(
        m.pairs
            .iter()
            .map(|p| (format!("{} -> {}", p.first_cpu, p.second_cpu), &p.outcome)),
    );
    out
}

/// One line for all flagged pairs: a matrix has many, and their causes repeat.
fn noise_line(m: &C2cMatrix) -> String {
    let flagged: Vec<_> = m
        .pairs
        .iter()
        .filter_map(|p| p.outcome.ok().and_then(|x| x.noise.as_ref()))
        .collect();
    let Some(first) = flagged.first() else {
        return String::new();
    };
    let worst = flagged.iter().map(|n| n.cv).fold(0.0, f64::max);
    format!(
        "  ! {} of {} pairs spread more than {:.1} % (largest coefficient of variation {:.1} %); likely: {}\n",
        flagged.len(),
        m.pairs.len(),
        100.0 * first.threshold_cv,
        100.0 * worst,
        first.likely_causes.join("; ")
    )
}

fn pages(r: &C2cReport) -> String {
    let mut out = String::from("\nLine pages:");
    for p in &r.line_pages {
        out += &match &p.outcome {
            Outcome::Ok(pl) => format!(
                " node {} (touched by CPU {}) {};",
                p.node,
                p.cpu,
                common::placement_text(&[pl])
            ),
            Outcome::Failed { reason } | Outcome::Skipped { reason } => {
                format!(" node {} FAILED: {reason};", p.node)
            }
        };
    }
    out.pop();
    out + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfabric_measure::c2c;
    use memfabric_model::{C2cClass, C2cLinePage, C2cMeasurement, C2cPair, Noise, Placement, Summary};

    fn pair(first: u32, second: u32, class: C2cClass, samples: &[f64]) -> C2cPair {
        let one_way_ns = Summary::of(samples).unwrap();
        let noise = (one_way_ns.cv > 0.05).then(|| Noise {
            cv: one_way_ns.cv,
            threshold_cv: 0.05,
            likely_causes: vec!["a virtual machine: other guests share the host's cores and memory".into()],
        });
        C2cPair {
            first_cpu: first,
            second_cpu: second,
            class,
            line_node: u32::from(first >= 2),
            outcome: Outcome::Ok(C2cMeasurement {
                one_way_ns,
                samples_one_way_ns: samples.to_vec(),
                first_affinity: vec![first],
                second_affinity: vec![second],
                noise,
            }),
        }
    }

    fn placement(node: u32, cpu: u32) -> Placement {
        Placement {
            requested_node: node,
            page_size_bytes: 4096,
            pages_total: 1,
            pages_sampled: 1,
            pages_on_node: 1,
            pages_elsewhere: vec![],
            thread_affinity: vec![cpu],
            verified: true,
            method: "mbind(MPOL_BIND) before first touch; move_pages query of 1 of 1 pages".into(),
            interleave: None,
        }
    }

    #[test]
    fn matrices_classes_and_mean() {
        use C2cClass::*;
        let cpus = vec![0, 1, 2];
        let cas = vec![
            pair(0, 1, SameL3, &[21.0, 22.0, 23.0]),
            pair(0, 2, OtherSocket, &[110.0, 112.0, 114.0]),
            pair(1, 0, SameL3, &[22.0, 22.5, 23.0]),
            pair(1, 2, OtherSocket, &[100.0, 150.0, 200.0]),
            pair(2, 0, OtherSocket, &[118.0, 120.0, 122.0]),
            C2cPair {
                outcome: Outcome::Failed {
                    reason: "could not pin the measuring thread to CPU 1: Invalid argument".into(),
                },
                ..pair(2, 1, OtherSocket, &[1.0])
            },
        ];
        let pingpong: Vec<C2cPair> = cas
            .iter()
            .map(|p| {
                let o = p.outcome.ok().map_or(vec![60.0, 61.0], |m| {
                    m.samples_one_way_ns.iter().map(|x| x * 1.5).collect()
                });
                pair(p.first_cpu, p.second_cpu, p.class, &o)
            })
            .collect();
        let r = C2cReport {
            method: c2c::METHOD.into(),
            cpus: cpus.clone(),
            modes: C2cMode::ALL.to_vec(),
            offsets_bytes: vec![64],
            samples: 3,
            warmup_samples: 1,
            round_trips_per_sample: 1000,
            line_pages: vec![
                C2cLinePage {
                    node: 0,
                    cpu: 0,
                    outcome: Outcome::Ok(placement(0, 0)),
                },
                C2cLinePage {
                    node: 1,
                    cpu: 2,
                    outcome: Outcome::Ok(placement(1, 2)),
                },
            ],
            matrices: vec![
                C2cMatrix::assemble(C2cMode::Cas, 64, &cpus, cas),
                C2cMatrix::assemble(C2cMode::Pingpong, 64, &cpus, pingpong),
            ],
        };
        insta::assert_snapshot!(render(&r));
    }
}
