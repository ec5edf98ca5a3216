//! memfabric's report: one self-contained HTML file per run (or pair of runs) with
//! SVG heatmaps and curves drawn here, inline CSS, no script and no network
//! reference, so it opens anywhere and can be mailed as is.
//!
//! Input is the typed document a command printed (and the store kept), read back
//! with [`StoredDocument::parse`], so a report can be made of any saved run by any
//! later version that still reads its schema; one it cannot read is an error that
//! says why, never a report with sections missing.

#![forbid(unsafe_code)]

pub mod svg;

mod c2c;
mod caveats;
mod concurrent;
mod fleet;
mod gpu;
mod monitor;
mod plan;
mod sections;
mod study;

use memfabric_model::StoredDocument;

pub use fleet::render_fleet;
pub use plan::{render_population, PlanPoint};
pub use sections::{dram_cells, sections};
pub use study::render_study;
use svg::esc;

/// What the report says about a run besides its document.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    pub id: i64,
    pub label: Option<String>,
    pub host: Option<String>,
    /// e.g. "2026-11-22 14:22 UTC".
    pub date: String,
    pub command: String,
    pub tool_version: String,
}

impl RunInfo {
    fn name(&self) -> String {
        match &self.label {
            Some(l) => format!("run {} ({l})", self.id),
            None => format!("run {}", self.id),
        }
    }
}

/// One figure of two runs, for the comparison page.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareLine {
    pub measurement: String,
    pub what: String,
    pub metric: String,
    pub a: f64,
    pub b: f64,
    pub percent: Option<f64>,
    pub noise: bool,
}

const STYLE: &str = "
body{font:14px/1.45 system-ui,-apple-system,'Segoe UI',sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:.6em 0;display:block;overflow-x:auto;max-width:100%}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}.meta{color:#555}.noise{color:#999}.bad{color:#b00}
ul.caveats{color:#8a4b00;margin:.3em 0}
svg{display:block;margin:.6em 0;max-width:100%;height:auto}svg .tick{font-size:11px;fill:#333}
svg .axis{font-size:12px;fill:#111}svg .val{font-size:11px}
";

fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>{}</title><style>{STYLE}</style></head><body>\n{body}\n<p class=\"meta\">Made by memfabric. GB/s are 10^9 bytes per second; hover a cell or point for its value.</p></body></html>\n",
        esc(title)
    )
}

fn header(info: &RunInfo, doc: &StoredDocument) -> String {
    let env = doc.environment.clone().unwrap_or_default();
    let known = |v: Option<String>| v.unwrap_or_else(|| "not known".into());
    let command = match &doc.document {
        memfabric_model::Document::Run(r) => format!("{} ({} suite)", info.command, r.suite.name()),
        _ => info.command.clone(),
    };
    format!(
        "<h1>memfabric: {}</h1><p class=\"meta\">{} on {} at {}; memfabric {}; CPU {}; kernel {}; THP {}; governor {}</p>",
        esc(&info.name()),
        esc(&command),
        esc(info.host.as_deref().unwrap_or("?")),
        esc(&info.date),
        esc(&info.tool_version),
        esc(&known(env.cpu_model)),
        esc(&known(env.kernel)),
        esc(&known(env.thp_enabled)),
        esc(&known(env.governor)),
    )
}

/// The report of one run.
pub fn render_run(info: &RunInfo, doc: &StoredDocument) -> String {
    let mut body = header(info, doc);
    for (title, html) in sections(&doc.document) {
        body += &format!("<h2>{}</h2>\n{html}\n", esc(&title));
    }
    page(&format!("memfabric {}", info.name()), &body)
}

/// The report of two runs: each run's sections, then every shared figure side by side.
pub fn render_comparison(
    a: (&RunInfo, &StoredDocument),
    b: (&RunInfo, &StoredDocument),
    lines: &[CompareLine],
) -> String {
    let mut body = format!(
        "<h1>memfabric: {} vs {}</h1><p class=\"meta\">Differences are B - A. Grey rows are within the larger of the two runs' sample ranges: noise, not a change.</p>",
        esc(&a.0.name()),
        esc(&b.0.name())
    );
    body += "<h2>Side by side</h2><table><tr><th class=\"l\">measurement</th><th class=\"l\">what</th><th class=\"l\">metric</th><th>A</th><th>B</th><th>%</th></tr>";
    for l in lines {
        let class = if l.noise { " class=\"noise\"" } else { "" };
        body += &format!(
            "<tr{class}><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.2}</td><td>{:.2}</td><td>{}</td></tr>",
            esc(&l.measurement),
            esc(&l.what),
            esc(&l.metric),
            l.a,
            l.b,
            l.percent.map_or("-".into(), |p| format!("{p:+.1}"))
        );
    }
    body += "</table>";
    for (info, doc) in [a, b] {
        body += &format!("<h2>{}</h2>", esc(&info.name()));
        body += &header(info, doc)
            .replacen("<h1>", "<h3>", 1)
            .replacen("</h1>", "</h3>", 1);
        for (title, html) in sections(&doc.document) {
            body += &format!("<h3>{}</h3>\n{html}\n", esc(&title));
        }
    }
    page(&format!("memfabric {} vs {}", a.0.name(), b.0.name()), &body)
}
