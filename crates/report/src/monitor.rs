//! A saved `monitor` run: the memory traffic over time, the system's and each
//! socket's, and every place's figures.

use memfabric_model::{MonitorReport, Outcome};

use crate::svg::{esc, LineChart, Series};

/// The time series, or why there is none, then the source and the command watched.
pub fn monitor(r: &MonitorReport) -> String {
    let mut s = match &r.outcome {
        Outcome::Ok(m) => {
            // The system and each socket; channels would crowd the chart.
            let series: Vec<Series> = m
                .series(|t| Some(t.total_gb_s))
                .into_iter()
                .filter(|(name, _)| name == "system" || name.starts_with("socket"))
                .map(|(name, points)| Series { name, points })
                .collect();
            LineChart {
                title: "Memory traffic over time, read + written",
                x_label: "time s",
                y_label: "GB/s",
                series,
                log2_x: false,
                marks: Vec::new(),
            }
            .render()
        }
        Outcome::Skipped { reason } => format!("<p class=\"meta\">Skipped: {}</p>", esc(reason)),
        Outcome::Failed { reason } => format!("<p class=\"bad\">Failed: {}</p>", esc(reason)),
    };
    s += &format!(
        "<p class=\"meta\">Source: {} ({}); one reading every {} s.</p>",
        esc(r.source.as_deref().unwrap_or("none")),
        esc(&r.source_reason),
        r.interval_s
    );
    if let Some(c) = &r.command {
        s += &format!(
            "<p class=\"meta\">While <code>{}</code> ran for {:.1} s (exit {}).</p>",
            esc(&c.argv.join(" ")),
            c.wall_s,
            c.exit_code.map_or("by a signal".into(), |e| e.to_string())
        );
    }
    s
}
