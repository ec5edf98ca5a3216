//! The core-to-core section: a heatmap per mode and offset, the pair medians by
//! topology class, and a word where the colours show less than the noise.

use memfabric_model::C2cReport;

use crate::svg::{esc, Heatmap};

/// Where every pair's median lies within the pairs' own noise, the heatmap's colours
/// (which span the least to the greatest median) show nothing real: say so.
fn within_noise(m: &memfabric_model::C2cMatrix) -> String {
    let medians: Vec<f64> = m.median_one_way_ns.iter().flatten().flatten().copied().collect();
    let mut cvs: Vec<f64> = m
        .pairs
        .iter()
        .filter_map(|p| p.outcome.ok().map(|x| x.one_way_ns.cv))
        .collect();
    let (Some(lo), Some(hi)) = (
        medians.iter().copied().reduce(f64::min),
        medians.iter().copied().reduce(f64::max),
    ) else {
        return String::new();
    };
    cvs.sort_by(f64::total_cmp);
    let noise = cvs.get(cvs.len() / 2).copied().unwrap_or(0.0).max(0.01);
    let spread = (hi - lo) / lo;
    if spread > noise {
        return String::new();
    }
    format!(
        "<p class=\"meta\">Every pair lies within {:.1} % ({lo:.1}-{hi:.1} ns), less than a pair's own spread ({:.1} %, the median coefficient of variation): the colours stretch a difference the samples do not show.</p>",
        spread * 100.0,
        noise * 100.0
    )
}

pub fn c2c(r: &C2cReport) -> String {
    let mut s = String::new();
    let cpus: Vec<String> = r.cpus.iter().map(u32::to_string).collect();
    for m in &r.matrices {
        let title = format!(
            "One-way core-to-core latency, median ns ({}, line at byte {} of its page)",
            m.mode.name(),
            m.offset_bytes
        );
        s += &Heatmap {
            title: &title,
            row_label: "CPU",
            col_label: "CPU",
            rows: cpus.clone(),
            cols: cpus.clone(),
            values: m.median_one_way_ns.clone(),
            unit: "ns",
            decimals: 0,
        }
        .render();
        s += &within_noise(m);
        s += "<table><tr><th class=\"l\">pairs</th><th>count</th><th>mean ns</th><th>min</th><th>max</th></tr>";
        for c in &m.classes {
            let p = &c.pair_medians_ns;
            s += &format!(
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td></tr>",
                esc(c.class.describe()),
                p.count,
                p.mean,
                p.min,
                p.max
            );
        }
        s += "</table>";
        if let Some(mean) = m.mean_one_way_ns {
            s += &format!("<p class=\"meta\">Mean of all samples: {mean:.1} ns.</p>");
        }
    }
    s
}
