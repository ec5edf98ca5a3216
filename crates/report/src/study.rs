//! A configuration study as one HTML page: per measurement and metric, grouped bars
//! (one group per figure, one bar per run), then the table of values and ratios.

use std::fmt::Write;

use memfabric_model::{Study, StudyRow};

use crate::svg::{colour, esc};

const ROW: f64 = 14.0;
const GAP: f64 = 8.0;
const LABEL: f64 = 220.0;
const BAR: f64 = 420.0;
/// Figures per chart: a matrix of 64 cells would be one long chart; the table has all.
const MAX_GROUPS: usize = 24;

pub fn render_study(s: &Study) -> String {
    let names: Vec<String> = s.runs.iter().map(|r| r.name()).collect();
    let mut body = format!(
        "<h1>memfabric: study of {} runs</h1><p class=\"meta\">Bars: each run's value of every figure the runs share. Ratios are to {}; grey ratios are within the two runs' sample ranges.</p>",
        s.runs.len(),
        esc(&names[0])
    );
    body += &legend(&names);
    let mut groups: Vec<(String, Vec<&StudyRow>)> = Vec::new();
    for r in &s.rows {
        let title = format!("{} {}", r.measurement, r.metric);
        match groups.iter_mut().find(|(t, _)| *t == title) {
            Some((_, v)) => v.push(r),
            None => groups.push((title, vec![r])),
        }
    }
    for (title, rows) in &groups {
        let _ = write!(body, "<h2>{}</h2>", esc(title));
        body += &bars(&rows[..rows.len().min(MAX_GROUPS)], names.len());
        if rows.len() > MAX_GROUPS {
            let _ = write!(
                body,
                "<p class=\"meta\">First {MAX_GROUPS} of {} figures drawn; all are in the table.</p>",
                rows.len()
            );
        }
    }
    body += &table(s, &names);
    crate::page(&format!("memfabric study of {} runs", s.runs.len()), &body)
}

fn shade(run: usize, runs: usize) -> String {
    colour(0.15 + 0.7 * run as f64 / (runs.max(2) - 1) as f64)
}

fn legend(names: &[String]) -> String {
    let items: Vec<String> = names
        .iter()
        .enumerate()
        .map(|(i, n)| {
            format!(
                "<span style=\"color:{}\">&#9632;</span> {}",
                shade(i, names.len()),
                esc(n)
            )
        })
        .collect();
    format!("<p>{}</p>", items.join(" &nbsp; "))
}

fn what(r: &StudyRow) -> String {
    r.dims
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn bars(rows: &[&StudyRow], runs: usize) -> String {
    let max = rows
        .iter()
        .flat_map(|r| r.values.iter())
        .fold(0.0, |m: f64, v| m.max(v.abs()))
        .max(f64::MIN_POSITIVE);
    let group = ROW * runs as f64 + GAP;
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" role=\"img\">",
        LABEL + BAR + 90.0,
        group * rows.len() as f64 + 4.0
    );
    for (g, r) in rows.iter().enumerate() {
        let y0 = group * g as f64 + 2.0;
        let _ = write!(
            s,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\" font-size=\"12\">{}</text>",
            LABEL - 6.0,
            y0 + ROW * runs as f64 / 2.0 + 4.0,
            esc(&what(r))
        );
        for (i, v) in r.values.iter().enumerate() {
            let y = y0 + ROW * i as f64;
            let w = BAR * v.abs() / max;
            let _ = write!(
                s,
                "<rect x=\"{LABEL}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{:.1}\" fill=\"{}\"><title>{v:.3}</title></rect><text x=\"{:.1}\" y=\"{:.1}\" font-size=\"10\">{v:.2}</text>",
                ROW - 2.0,
                shade(i, runs),
                LABEL + w + 4.0,
                y + ROW - 4.0
            );
        }
    }
    s + "</svg>"
}

fn table(s: &Study, names: &[String]) -> String {
    let mut t = String::from("<h2>Every shared figure</h2><table><tr><th class=\"l\">measurement</th><th class=\"l\">what</th><th class=\"l\">metric</th>");
    for n in names {
        let _ = write!(t, "<th>{}</th>", esc(n));
    }
    for n in names.iter().skip(1) {
        let _ = write!(t, "<th>{} / {}</th>", esc(n), esc(&names[0]));
    }
    t += "</tr>";
    for r in &s.rows {
        let _ = write!(
            t,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>",
            esc(&r.measurement),
            esc(&what(r)),
            esc(&r.metric)
        );
        for v in &r.values {
            let _ = write!(t, "<td>{v:.2}</td>");
        }
        for (x, &noise) in r.ratios.iter().zip(&r.noise).skip(1) {
            let class = if noise { " class=\"noise\"" } else { "" };
            let _ = write!(
                t,
                "<td{class}>{}</td>",
                x.map_or("-".into(), |x| format!("{x:.3}"))
            );
        }
        t += "</tr>";
    }
    t + "</table>"
}

#[cfg(test)]
mod tests {
    use memfabric_model::{study, Figure, StudyRun};

    fn fig(node: u32, value: f64) -> Figure {
        Figure {
            measurement: "stream".into(),
            dims: [("node".to_string(), node.to_string())].into_iter().collect(),
            metric: "bandwidth_gb_s".into(),
            value,
            min: Some(value - 1.0),
            max: Some(value + 1.0),
            cv: None,
            samples: 5,
        }
    }

    #[test]
    fn grouped_bars_one_per_run_and_the_ratio_table() {
        let runs: Vec<_> = [("nps1", 100.0), ("nps2", 110.0), ("nps4", 120.5)]
            .iter()
            .enumerate()
            .map(|(i, &(l, v))| {
                let run = StudyRun {
                    id: i as i64 + 1,
                    label: Some(l.into()),
                };
                (run, vec![fig(0, v), fig(1, v / 2.0)])
            })
            .collect();
        let html = super::render_study(&study(&runs));
        assert_eq!(html.matches("<rect").count(), 6, "2 figures x 3 runs");
        assert!(html.contains("#3 nps4 / #1 nps1") && html.contains("1.205"));
        insta::assert_snapshot!(html);
    }
}
