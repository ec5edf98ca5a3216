//! The fleet report as one HTML page: a heatmap of hosts against headline figures
//! (colour: how much worse than the class median), a strip plot per class (every
//! host's distance from its class median, per figure, with the outlier limit), then
//! the outliers and the configuration drift as tables.

use std::collections::BTreeSet;
use std::fmt::Write;

use memfabric_model::fleet::{ClassReport, FleetReport, Headline, HostRow};

use crate::svg::esc;

/// Host rows in the heatmap: every outlier host first, then the next worst.
const HEAT_ROWS: usize = 60;
/// Dots per strip beyond which the hosts within the limit are thinned (outliers never are).
const STRIP_DOTS: usize = 1500;
const CELL_W: f64 = 132.0;
const CELL_H: f64 = 16.0;
const LABEL_W: f64 = 170.0;
const STRIP_W: f64 = 560.0;
const STRIP_H: f64 = 34.0;

pub fn render_fleet(r: &FleetReport, title: &str) -> String {
    let heads: Vec<Headline> = Headline::ALL
        .into_iter()
        .filter(|h| r.rows.iter().any(|row| row.values.contains_key(h.name())))
        .collect();
    let outlier_hosts = r.rows.iter().filter(|h| h.outlier).count();
    let mut body = format!(
        "<h1>memfabric: fleet report, {}</h1><p class=\"meta\">{} hosts in {} classes; {} outliers on {outlier_hosts} hosts. Rule: {}.</p>",
        esc(title),
        r.hosts,
        r.classes.len(),
        r.outliers.len(),
        esc(&r.rule_text)
    );
    if !r.missing.is_empty() {
        let items: Vec<String> = r
            .missing
            .iter()
            .map(|m| {
                format!(
                    "<li>{} ({}): {}</li>",
                    esc(&m.node),
                    esc(m.status.name()),
                    esc(m.reason.as_deref().unwrap_or("no reason recorded"))
                )
            })
            .collect();
        let _ = write!(body, "<h2>Nodes without a run</h2><ul>{}</ul>", items.concat());
    }
    let outlying = r.outlying();
    body += &heatmap(r, &heads, &outlying);
    for c in &r.classes {
        let _ = write!(
            body,
            "<h2>{}</h2><p class=\"meta\">{} hosts{}</p>",
            esc(&c.key),
            c.hosts,
            if c.judged { "" } else { "; too few to judge" }
        );
        body += &strips(r, c, &heads, &outlying);
    }
    body += &outliers(r);
    body += &drift(r);
    crate::page(&format!("memfabric fleet report, {title}"), &body)
}

/// Fill for a figure `worse` percent worse than its class median: pale when at or
/// better than the median, red at twice the rule's threshold.
fn fill(worse: f64, threshold: f64) -> String {
    let t = (worse / (2.0 * threshold.max(1.0))).clamp(0.0, 1.0);
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(236.0, 215.0),
        mix(242.0, 48.0),
        mix(236.0, 39.0)
    )
}

fn worst(h: &HostRow) -> f64 {
    h.worse_pct.values().copied().fold(f64::NEG_INFINITY, f64::max)
}

/// (run, headline) pairs that are outliers: `FleetReport::outlying`.
type Outlying<'a> = BTreeSet<(i64, &'a str)>;

fn heatmap(r: &FleetReport, heads: &[Headline], outlying: &Outlying<'_>) -> String {
    let mut rows: Vec<&HostRow> = r.rows.iter().collect();
    rows.sort_by(|a, b| {
        b.outlier
            .cmp(&a.outlier)
            .then(worst(b).total_cmp(&worst(a)))
            .then(a.name.cmp(&b.name))
    });
    rows.truncate(HEAT_ROWS);
    let w = LABEL_W + CELL_W * heads.len() as f64;
    let h = CELL_H * (rows.len() + 1) as f64 + 4.0;
    let mut s = format!(
        "<h2>Hosts against their class</h2><p class=\"meta\">The {} worst of {} hosts, outliers first; colour: how much worse than the class median (red at {}% and beyond); outlier cells outlined.</p><svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-size=\"11\" font-family=\"sans-serif\">",
        rows.len(),
        r.rows.len(),
        2.0 * r.rule.worse_pct
    );
    for (j, hd) in heads.iter().enumerate() {
        let x = LABEL_W + CELL_W * j as f64 + CELL_W / 2.0;
        let _ = write!(
            s,
            "<text x=\"{x}\" y=\"12\" text-anchor=\"middle\">{}</text>",
            esc(hd.title())
        );
    }
    for (i, row) in rows.iter().enumerate() {
        let y = CELL_H * (i + 1) as f64;
        let _ = write!(s, "<text x=\"0\" y=\"{}\">{}</text>", y + 12.0, esc(&row.name));
        for (j, hd) in heads.iter().enumerate() {
            let x = LABEL_W + CELL_W * j as f64;
            let (Some(v), Some(worse)) = (row.values.get(hd.name()), row.worse_pct.get(hd.name())) else {
                continue;
            };
            let out = outlying.contains(&(row.run_id, hd.name()));
            let stroke = if out {
                " stroke=\"#000\" stroke-width=\"1.5\""
            } else {
                ""
            };
            let _ = write!(
                s,
                "<rect x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{}\" fill=\"{}\"{stroke}><title>{}: {} {v:.1} ({worse:+.1}% worse than {})</title></rect><text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{v:.1}</text>",
                CELL_W - 2.0,
                CELL_H - 2.0,
                fill(*worse, r.rule.worse_pct),
                esc(&row.name),
                hd.name(),
                esc(&row.class),
                x + CELL_W / 2.0,
                y + 12.0
            );
        }
    }
    s + "</svg>"
}

/// A stable pseudo-random vertical offset in [0, 1) for dot `i`.
fn jitter(i: usize) -> f64 {
    let x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    x as f64 / (1u64 << 24) as f64
}

fn strips(r: &FleetReport, c: &ClassReport, heads: &[Headline], outlying: &Outlying<'_>) -> String {
    let members: Vec<&HostRow> = r.rows.iter().filter(|h| h.class == c.key).collect();
    let span = (3.0 * r.rule.worse_pct).max(10.0);
    let x_of = |worse: f64| LABEL_W + STRIP_W * (worse.clamp(-span, span) + span) / (2.0 * span);
    let shown: Vec<&Headline> = heads
        .iter()
        .filter(|h| c.stats.iter().any(|s| s.headline == h.name()))
        .collect();
    let h = STRIP_H * shown.len() as f64 + 24.0;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{h}\" font-size=\"11\" font-family=\"sans-serif\">",
        LABEL_W + STRIP_W + 10.0
    );
    let _ = write!(
        s,
        "<line x1=\"{m}\" x2=\"{m}\" y1=\"0\" y2=\"{}\" stroke=\"#888\"/><text x=\"{}\" y=\"{}\">better</text><text x=\"{m}\" y=\"{}\" text-anchor=\"middle\">class median</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">worse ({span:.0}% and beyond at the edge)</text>",
        h - 14.0,
        LABEL_W,
        h - 2.0,
        h - 2.0,
        LABEL_W + STRIP_W,
        h - 2.0,
        m = x_of(0.0)
    );
    for (k, hd) in shown.iter().enumerate() {
        let top = STRIP_H * k as f64;
        let stats = c
            .stats
            .iter()
            .find(|s| s.headline == hd.name())
            .expect("filtered");
        let _ = write!(s, "<text x=\"0\" y=\"{}\">{}</text>", top + 20.0, esc(hd.title()));
        if let Some(limit) = stats.limit {
            let sign = if stats.higher_is_better { -1.0 } else { 1.0 };
            let x = x_of(sign * (limit - stats.median) / stats.median * 100.0);
            let _ = write!(
                s,
                "<line x1=\"{x}\" x2=\"{x}\" y1=\"{top}\" y2=\"{}\" stroke=\"#d73027\" stroke-dasharray=\"3,2\"><title>outlier limit {limit:.1}</title></line>",
                top + STRIP_H - 4.0
            );
        }
        let dots: Vec<(&HostRow, f64)> = members
            .iter()
            .filter_map(|m| m.worse_pct.get(hd.name()).map(|w| (*m, *w)))
            .collect();
        let step = dots.len().div_ceil(STRIP_DOTS).max(1);
        for (i, (m, worse)) in dots.iter().enumerate() {
            let out = outlying.contains(&(m.run_id, hd.name()));
            if !out && i % step != 0 {
                continue;
            }
            let (colour, radius) = if out { ("#d73027", 3.5) } else { ("#4a6fa5", 2.0) };
            let _ = write!(
                s,
                "<circle cx=\"{:.1}\" cy=\"{:.1}\" r=\"{radius}\" fill=\"{colour}\" fill-opacity=\"0.6\"><title>{}: {:.1} ({worse:+.1}%)</title></circle>",
                x_of(*worse),
                top + 4.0 + jitter(i) * (STRIP_H - 12.0),
                esc(&m.name),
                m.values[hd.name()]
            );
        }
        if step > 1 {
            let _ = write!(
                s,
                "<text x=\"{}\" y=\"{}\" text-anchor=\"end\" fill=\"#666\">1 in {step} of {} hosts drawn; all outliers</text>",
                LABEL_W + STRIP_W,
                top + 10.0,
                dots.len()
            );
        }
    }
    s + "</svg>"
}

fn outliers(r: &FleetReport) -> String {
    if r.outliers.is_empty() {
        return "<h2>Outliers</h2><p>None.</p>".into();
    }
    let mut s = String::from("<h2>Outliers</h2><table><tr><th>host</th><th>class</th><th>figure</th><th>value</th><th>class median</th><th>worse %</th><th>likely cause</th></tr>");
    for o in &r.outliers {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td></tr>",
            esc(&o.host),
            esc(&o.class),
            o.headline,
            o.value,
            o.median,
            o.worse_pct,
            esc(&o.causes.join("; "))
        );
    }
    s + "</table>"
}

fn drift(r: &FleetReport) -> String {
    if r.drift.is_empty() {
        return "<h2>Configuration drift</h2><p>None: every class's hosts record the same facts.</p>".into();
    }
    let mut s = String::from(
        "<h2>Configuration drift</h2><table><tr><th>class</th><th>fact</th><th>values (hosts)</th></tr>",
    );
    for d in &r.drift {
        let values: Vec<String> = d
            .values
            .iter()
            .map(|v| format!("{} ({})", esc(&v.value), v.hosts))
            .collect();
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&d.class),
            esc(&d.fact),
            values.join(", ")
        );
    }
    s + "</table>"
}
