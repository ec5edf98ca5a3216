//! A saved `bandwidth --concurrent`: each stream's rate as a bar beside the total,
//! the overlap that proves they ran at once, and what crossed between sockets.

use std::fmt::Write;

use memfabric_model::{ConcurrentReport, Outcome};

use crate::svg::{colour, esc};

const ROW: f64 = 22.0;
const LABEL: f64 = 150.0;
const BAR: f64 = 360.0;

/// The bars, then the overlap and link lines.
pub fn concurrent(r: &ConcurrentReport) -> String {
    let m = match &r.outcome {
        Outcome::Ok(m) => m,
        Outcome::Skipped { reason } => return format!("<p class=\"meta\">Skipped: {}</p>", esc(reason)),
        Outcome::Failed { reason } => return format!("<p class=\"bad\">Failed: {}</p>", esc(reason)),
    };
    let mut rows: Vec<(String, f64)> = m
        .streams
        .iter()
        .map(|s| {
            (
                format!("node {} \u{2192} {}", s.cpu_node, s.mem_node),
                s.bandwidth_gb_s.median,
            )
        })
        .collect();
    rows.push(("all at once".into(), m.total_gb_s.median));
    let mut s = format!(
        "<p>{}: {}, mix {}.</p>",
        esc(r.pattern.name()),
        esc(r.pattern.question()),
        esc(&r.mix.mix.to_string())
    );
    s += &bars(&rows);
    let (class, said) = if m.ran_together() {
        ("meta", "The streams ran at once")
    } else {
        ("bad", "The streams did not all run at once")
    };
    let _ = write!(
        s,
        "<p class=\"{class}\">{said}: at least {:.1} % of each sample's span was common to all; the streams' own rates add up to {:.1} GB/s.</p>",
        m.min_overlap_pct, m.sum_of_streams_gb_s.median
    );
    if !m.links.is_empty() {
        let flows: Vec<String> = m
            .links
            .iter()
            .map(|l| {
                format!(
                    "socket {} \u{2192} {}: {:.1} GB/s ({:.0} %)",
                    l.from_socket, l.to_socket, l.gb_s, l.share_pct
                )
            })
            .collect();
        let _ = write!(
            s,
            "<p class=\"meta\">Across sockets: {}.</p>",
            esc(&flows.join("; "))
        );
    }
    s
}

/// Horizontal bars, longest = the largest value, each labelled with its GB/s.
fn bars(rows: &[(String, f64)]) -> String {
    let max = rows
        .iter()
        .map(|r| r.1)
        .fold(0.0, f64::max)
        .max(f64::MIN_POSITIVE);
    let height = ROW * rows.len() as f64 + 4.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" role=\"img\">",
        LABEL + BAR + 80.0
    );
    for (i, (label, v)) in rows.iter().enumerate() {
        let y = ROW * i as f64 + 2.0;
        let w = BAR * v / max;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" font-size=\"12\">{}</text>\
             <rect x=\"{LABEL}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\" fill=\"{}\"><title>{} {v:.2} GB/s</title></rect>\
             <text x=\"{:.1}\" y=\"{}\" font-size=\"12\">{v:.1} GB/s</text>",
            LABEL - 6.0,
            y + 14.0,
            esc(label),
            ROW - 6.0,
            colour(if i + 1 == rows.len() { 0.8 } else { 0.35 }),
            esc(label),
            LABEL + w + 4.0,
            y + 14.0
        );
    }
    s + "</svg>"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs() -> ConcurrentReport {
        let text = include_str!("../../../tests/fixtures/documents/concurrent-pairs.json");
        match memfabric_model::StoredDocument::parse(text).unwrap().document {
            memfabric_model::Document::BandwidthConcurrent(r) => r,
            other => panic!("a {} document", other.command()),
        }
    }

    #[test]
    fn a_bar_per_stream_and_one_for_all_at_once() {
        let html = concurrent(&pairs());
        assert_eq!(html.matches("<rect").count(), 3);
        assert!(html.contains("all at once") && html.contains("socket 0 \u{2192} 1"));
        insta::assert_snapshot!(html);
    }
}
