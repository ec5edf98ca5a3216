//! `memfabric bandwidth --concurrent`: streams run at once, per stream and in total.

use anyhow::Result;
use memfabric_measure::concurrent::Concurrent;
use memfabric_measure::plan::concurrent::ConcurrentOptions;
use memfabric_measure::Request;
use memfabric_model::{format_size, ConcurrentReport, Outcome};
use memfabric_topo::{format_cpulist, Topology};

use super::common;
use crate::args::BandwidthArgs;
use crate::output::{Ctx, Usage};
use crate::table::Table;

pub fn measure_concurrent(ctx: &Ctx, topo: &Topology, a: &BandwidthArgs) -> Result<ConcurrentReport> {
    let Some(pattern) = a.concurrent else {
        return Err(Usage("--concurrent needs a pattern".into()).into());
    };
    let mix = match a.mix.0.as_slice() {
        [m] => *m,
        _ => return Err(Usage("--concurrent takes one --mix".into()).into()),
    };
    let threads = match a.threads.as_ref().map(|t| t.0.as_slice()) {
        None => None,
        Some([t]) => Some(*t),
        Some(_) => {
            return Err(Usage("--concurrent takes one --threads count (threads per stream)".into()).into())
        }
    };
    let options = ConcurrentOptions {
        pattern: pattern.into(),
        mix,
        threads,
        array_bytes_per_thread: a.size,
        huge_pages: a.common.huge_pages.into(),
        samples: a.common.samples,
        isa: common::isa(a.kernel)?,
    };
    let request = Request {
        options,
        selection: common::selection(&a.select, None)?,
        cv_threshold_pct: a.common.cv_threshold,
        memory_peak: None,
    };
    common::measure::<Concurrent>(ctx, topo, &request)
}

pub fn render_concurrent(r: &ConcurrentReport) -> String {
    let mut out = format!(
        "Bandwidth with streams at once, pattern {}: {}\n\
         mix {} ({}), {} kernel, {} per array per thread, huge pages: {}\n",
        r.pattern.name(),
        r.pattern.question(),
        r.mix.mix,
        r.mix.description,
        r.kernel,
        format_size(r.array_bytes_per_thread),
        common::json_name(&r.huge_pages)
    );
    let m = match &r.outcome {
        Outcome::Ok(m) => m,
        Outcome::Failed { reason } => return out + &format!("FAILED: {reason}\n"),
        Outcome::Skipped { reason } => return out + &format!("skipped: {reason}\n"),
    };
    let mut t = Table::new(&[
        "<stream",
        "<cpus",
        "median GB/s",
        "min",
        "max",
        "cv %",
        "<placement",
    ]);
    for (spec, s) in r.streams.iter().zip(&m.streams) {
        t.row(vec![
            format!("node {} -> node {}", s.cpu_node, s.mem_node),
            format_cpulist(&spec.cpus),
            format!("{:.2}", s.bandwidth_gb_s.median),
            format!("{:.2}", s.bandwidth_gb_s.min),
            format!("{:.2}", s.bandwidth_gb_s.max),
            format!("{:.1}", 100.0 * s.bandwidth_gb_s.cv),
            common::placement_text(&s.placement.iter().collect::<Vec<_>>()),
        ]);
    }
    t.row(vec![
        "all at once".into(),
        String::new(),
        format!("{:.2}", m.total_gb_s.median),
        format!("{:.2}", m.total_gb_s.min),
        format!("{:.2}", m.total_gb_s.max),
        format!("{:.1}", 100.0 * m.total_gb_s.cv),
        String::new(),
    ]);
    out += &t.render();
    out += &if m.ran_together() {
        format!(
            "The streams ran at once: in every sample at least {:.1} % of the span from the first start to the last end was common to all of them.\n",
            m.min_overlap_pct
        )
    } else {
        format!(
            "  ! the streams did not all run at once: in one sample only {:.1} % of the span was common to all of them, so their rates are partly those of streams running alone; a larger --size makes each sample outlast the scheduler's time slices\n",
            m.min_overlap_pct
        )
    };
    out += &format!(
        "Their own rates add up to {:.2} GB/s; the total counts all bytes over the whole span, so it is at most that sum.\n",
        m.sum_of_streams_gb_s.median
    );
    if !m.links.is_empty() {
        let flows: Vec<String> = m
            .links
            .iter()
            .map(|l| {
                format!(
                    "socket {} -> {}: {:.2} GB/s ({:.0} %)",
                    l.from_socket, l.to_socket, l.gb_s, l.share_pct
                )
            })
            .collect();
        out += &format!(
            "Across the socket links (reads flow memory -> CPU, writes back): {}\n",
            flows.join("; ")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// tests/fixtures/documents/concurrent-pairs.json: two sockets reading each
    /// other's memory with copy (written by hand, the figures consistent).
    pub fn pairs() -> ConcurrentReport {
        let text = include_str!("../../../../../tests/fixtures/documents/concurrent-pairs.json");
        match memfabric_model::StoredDocument::parse(text).unwrap().document {
            memfabric_model::Document::BandwidthConcurrent(r) => r,
            other => panic!("a {} document", other.command()),
        }
    }

    #[test]
    fn streams_total_overlap_and_links_in_one_table() {
        let text = render_concurrent(&pairs());
        assert!(text.contains("node 0 -> node 1") && text.contains("node 1 -> node 0"));
        assert!(text.contains("socket 0 -> 1") && text.contains("(50 %)"));
        insta::assert_snapshot!(text);
    }
}
