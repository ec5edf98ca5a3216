//! `memfabric compare A B C ...` (or `--label-prefix`): a configuration study, one
//! column per run and each run's ratio to the first.

use std::path::Path;

use anyhow::Result;
use memfabric_model::{study, Study, StudyRun};
use memfabric_store::Store;

use super::helpers::{dims_text, write_atomically};
use crate::output::{print_all, Ctx, Status};
use crate::table::Table;

pub fn run(ctx: &Ctx, store: &Store, ids: &[i64], html: Option<&Path>) -> Result<Status> {
    let mut runs = Vec::with_capacity(ids.len());
    for &id in ids {
        let label = store.summary(id)?.label;
        runs.push((StudyRun { id, label }, store.figures(id)?));
    }
    let s = study(&runs);
    if let Some(path) = html {
        write_atomically(path, &memfabric_report::render_study(&s))?;
        eprintln!("memfabric: wrote {}", path.display());
    }
    // Each later run against the first: the settings a study's ratios may owe to.
    let mut differ = Vec::new();
    for &id in &ids[1..] {
        for d in super::runs::settings_differ(store, ids[0], id)? {
            differ.push(StudySetting { run: id, diff: d });
        }
    }
    if ctx.json {
        ctx.print_json(
            "compare",
            None,
            Studied {
                study: &s,
                settings_differ: &differ,
            },
        )?;
    } else {
        let diffs: Vec<_> = differ
            .iter()
            .map(|d| memfabric_model::settings::SettingDiff {
                setting: format!("run {}: {}", d.run, d.diff.setting),
                ..d.diff.clone()
            })
            .collect();
        let warning = super::runs::settings_text(&diffs, &format!("run {}", ids[0]), "that run");
        print_all(&(warning + &render(&s)))?;
    }
    Ok(Status::Ok)
}

#[derive(serde::Serialize)]
struct StudySetting {
    /// The later run whose setting differs from the first run's.
    run: i64,
    #[serde(flatten)]
    diff: memfabric_model::settings::SettingDiff,
}

#[derive(serde::Serialize)]
struct Studied<'a> {
    #[serde(flatten)]
    study: &'a Study,
    settings_differ: &'a [StudySetting],
}

/// One row per shared figure: each run's value, then each later run's ratio to the
/// first, marked `~` where the difference is inside the runs' spread.
pub fn render(s: &Study) -> String {
    let names: Vec<String> = s.runs.iter().map(StudyRun::name).collect();
    let mut head = vec!["<measurement".to_string(), "<what".into(), "<metric".into()];
    head.extend(names.iter().cloned());
    head.extend(names.iter().skip(1).map(|n| format!("{n} / {}", names[0])));
    let refs: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = Table::new(&refs);
    for r in &s.rows {
        let mut row = vec![r.measurement.clone(), dims_text(&r.dims), r.metric.clone()];
        row.extend(r.values.iter().map(|v| format!("{v:.2}")));
        row.extend(r.ratios.iter().zip(&r.noise).skip(1).map(|(x, &noise)| match x {
            Some(x) => format!("{x:.3}{}", if noise { " ~" } else { "" }),
            None => "-".into(),
        }));
        t.row(row);
    }
    let mut out = format!(
        "Study of {} runs; ratios are to {} (~: within the two runs' sample ranges, not a measured change)\n",
        s.runs.len(),
        names[0]
    );
    out += &t.render();
    if s.not_in_every_run > 0 {
        out += &format!(
            "{} figure(s) of {} are missing from some run and are left out\n",
            s.not_in_every_run, names[0]
        );
    }
    out
}
