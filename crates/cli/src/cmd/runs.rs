//! `memfabric runs` (list, show, delete, export) and `memfabric compare`: the run
//! history kept by --save, --label and `run`.

use anyhow::Result;
use memfabric_model::settings::SettingDiff;
use memfabric_model::Figure;
use memfabric_store::{compare, figures_csv, CompareRow, Comparison, RunSummary};
use serde::Serialize;

use super::helpers::{date, dims_text, open, resolve};
use crate::args::{CompareArgs, ExportFormat, RunsAction, RunsArgs};
use crate::output::{print_all, Ctx, Status, Usage};
use crate::table::Table;

fn summary_table(runs: &[RunSummary]) -> String {
    let mut t = Table::new(&[
        "id", "<date", "<host", "<label", "<command", "figures", "<summary",
    ]);
    for r in runs {
        t.row(vec![
            r.id.to_string(),
            date(r.started_unix_s),
            r.host.clone().unwrap_or_default(),
            r.label.clone().unwrap_or_default(),
            r.command.clone(),
            r.figures.to_string(),
            r.summary.clone(),
        ]);
    }
    t.render()
}

fn figures_table(figures: &[Figure]) -> String {
    let mut t = Table::new(&[
        "<measurement",
        "<what",
        "<metric",
        "value",
        "min",
        "max",
        "cv %",
        "samples",
    ]);
    let num = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.2}"));
    for f in figures {
        t.row(vec![
            f.measurement.clone(),
            dims_text(&f.dims),
            f.metric.clone(),
            format!("{:.2}", f.value),
            num(f.min),
            num(f.max),
            f.cv.map_or("-".into(), |c| format!("{:.1}", 100.0 * c)),
            f.samples.to_string(),
        ]);
    }
    t.render()
}

#[derive(Serialize)]
struct Shown {
    run: RunSummary,
    figures: Vec<Figure>,
}

pub fn runs(ctx: &Ctx, a: &RunsArgs) -> Result<Status> {
    let mut store = open(ctx)?;
    match &a.action {
        RunsAction::List { class, host_id } => {
            let mut list = store.list()?;
            list.retain(|r| {
                class.as_ref().is_none_or(|c| r.class_key.as_ref() == Some(c))
                    && host_id.as_ref().is_none_or(|h| r.host_id.as_ref() == Some(h))
            });
            if ctx.json {
                ctx.print_json("runs", None, &list)?;
            } else if list.is_empty() {
                print_all(&format!("No runs in {}\n", store.location()))?;
            } else {
                print_all(&summary_table(&list))?;
            }
        }
        RunsAction::Show { run } => {
            let id = resolve(&store, run)?;
            let shown = Shown {
                run: store.summary(id)?,
                figures: store.figures(id)?,
            };
            if ctx.json {
                ctx.print_json("runs", None, &shown)?;
            } else {
                let r = &shown.run;
                let unknown = || "unknown (saved before 0.5)".to_string();
                let text = summary_table(std::slice::from_ref(r))
                    + &format!(
                        "class: {}\nhost id: {}\n\n",
                        r.class_key.clone().unwrap_or_else(unknown),
                        r.host_id.clone().unwrap_or_else(unknown)
                    )
                    + &figures_table(&shown.figures);
                print_all(&text)?;
            }
        }
        RunsAction::Delete { run } => {
            let id = resolve(&store, run)?;
            store.delete(id)?;
            if ctx.json {
                ctx.print_json(
                    "runs-delete",
                    None,
                    serde_json::json!({"deleted": id, "store": store.location()}),
                )?;
            } else {
                eprintln!("memfabric: deleted run {id}");
            }
        }
        RunsAction::Export { run, format } => {
            let id = resolve(&store, run)?;
            let text = match format {
                ExportFormat::Json => with_label(&store.document(id)?, store.summary(id)?.label.as_deref()),
                ExportFormat::Csv => figures_csv(id, &store.figures(id)?),
            };
            print_all(&text)?;
        }
    }
    Ok(Status::Ok)
}

/// The stored document with the run's label as its first field, so that export then
/// `fleet ingest` keeps it; the document is otherwise the stored text, byte for byte
/// (the label does not count in the document's hash).
fn with_label(document: &str, label: Option<&str>) -> String {
    // A document ingested from an export holds its label already.
    let has_label =
        serde_json::from_str::<serde_json::Value>(document).is_ok_and(|v| v.get("label").is_some());
    match (label.filter(|_| !has_label), document.strip_prefix('{')) {
        (Some(l), Some(rest)) => {
            let l = serde_json::to_string(l).expect("a string encodes");
            format!("{{\n  \"label\": {l},{rest}")
        }
        _ => document.to_string(),
    }
}

pub fn compare_runs(ctx: &Ctx, a: &CompareArgs) -> Result<Status> {
    let store = open(ctx)?;
    let ids = match &a.label_prefix {
        Some(prefix) => {
            let mut runs = store.list()?;
            runs.retain(|r| r.label.as_deref().is_some_and(|l| l.starts_with(prefix.as_str())));
            runs.iter().rev().map(|r| r.id).collect()
        }
        None => a
            .runs
            .iter()
            .map(|r| resolve(&store, r))
            .collect::<Result<Vec<i64>>>()?,
    };
    if ids.len() < 2 {
        return Err(Usage(format!(
            "compare needs at least two runs; {} given or matched",
            ids.len()
        ))
        .into());
    }
    if let Some(twice) = ids
        .iter()
        .enumerate()
        .find_map(|(i, id)| ids[..i].contains(id).then_some(id))
    {
        return Err(Usage(format!(
            "run {twice} is given twice: compare holds different runs side by side, and a run against itself differs in nothing"
        ))
        .into());
    }
    if ids.len() > 2 || a.label_prefix.is_some() || a.html.is_some() {
        return super::study::run(ctx, &store, &ids, a.html.as_deref());
    }
    let (ia, ib) = (ids[0], ids[1]);
    let c = compare(ia, &store.figures(ia)?, ib, &store.figures(ib)?);
    let differ = settings_differ(&store, ia, ib)?;
    if ctx.json {
        ctx.print_json(
            "compare",
            None,
            Compared {
                comparison: &c,
                settings_differ: &differ,
            },
        )?;
    } else {
        let runs = [store.summary(ia)?, store.summary(ib)?];
        let text = summary_table(&runs)
            + &settings_text(&differ, &format!("run {ia}"), &format!("run {ib}"))
            + "\n"
            + &render_comparison(&c);
        print_all(&text)?;
    }
    Ok(Status::Ok)
}

#[derive(serde::Serialize)]
struct Compared<'a> {
    #[serde(flatten)]
    comparison: &'a Comparison,
    /// Settings the two runs were taken with that differ: their differences may be
    /// these settings', not the machine's.
    settings_differ: &'a [SettingDiff],
}

/// The settings two stored runs differ in.
pub fn settings_differ(store: &memfabric_store::Store, a: i64, b: i64) -> Result<Vec<SettingDiff>> {
    let doc = |id| -> Result<serde_json::Value> { Ok(serde_json::from_str(&store.document(id)?)?) };
    Ok(memfabric_model::settings::differences(&doc(a)?, &doc(b)?))
}

/// The warning that heads a comparison of runs taken differently.
pub fn settings_text(d: &[SettingDiff], a: &str, b: &str) -> String {
    if d.is_empty() {
        return String::new();
    }
    let (a, b) = (format!("<{a}"), format!("<{b}"));
    let mut t = Table::new(&["<setting", &a, &b]);
    for x in d {
        t.row(vec![x.setting.clone(), x.a.clone(), x.b.clone()]);
    }
    format!(
        "\nThe runs were taken with different settings: the differences below may be these settings', not the machine's.\n{}",
        t.render()
    )
}

/// Matrices (figures with cpu_node and mem_node) as difference matrices, everything
/// else as one row per figure.
pub fn render_comparison(c: &Comparison) -> String {
    let mut out = String::new();
    let is_cell = |r: &CompareRow| r.dims.contains_key("cpu_node") && r.dims.contains_key("mem_node");
    let mut groups: Vec<(String, Vec<&CompareRow>)> = Vec::new();
    for r in c.rows.iter().filter(|r| is_cell(r)) {
        let mut rest = r.dims.clone();
        rest.remove("cpu_node");
        rest.remove("mem_node");
        let title = format!("{} {} {}", r.measurement, r.metric, dims_text(&rest));
        match groups.iter_mut().find(|(t, _)| *t == title) {
            Some((_, v)) => v.push(r),
            None => groups.push((title, vec![r])),
        }
    }
    for (title, rows) in &groups {
        out += &difference_matrix(c, title.trim_end(), rows);
        out += "\n";
    }
    let mut t = Table::new(&[
        "<measurement",
        "<what",
        "<metric",
        "run A",
        "run B",
        "B - A",
        "%",
        "<",
    ]);
    for r in c.rows.iter().filter(|r| !is_cell(r)) {
        t.row(vec![
            r.measurement.clone(),
            dims_text(&r.dims),
            r.metric.clone(),
            format!("{:.2}", r.a),
            format!("{:.2}", r.b),
            format!("{:+.2}", r.delta),
            r.percent.map_or("-".into(), |p| format!("{p:+.1}")),
            if r.noise { "noise".into() } else { String::new() },
        ]);
    }
    if c.rows.iter().any(|r| !is_cell(r)) {
        out += &t.render();
    }
    out += &format!(
        "{} figures compared; {} only in run {}, {} only in run {}. \"~\" and \"noise\": the difference is within the larger of the two runs' sample ranges.\n",
        c.rows.len(),
        c.only_in_a,
        c.a,
        c.only_in_b,
        c.b
    );
    out
}

fn difference_matrix(c: &Comparison, title: &str, rows: &[&CompareRow]) -> String {
    let id = |r: &CompareRow, k: &str| r.dims[k].parse::<u32>().unwrap_or(u32::MAX);
    let mut cpus: Vec<u32> = rows.iter().map(|r| id(r, "cpu_node")).collect();
    let mut mems: Vec<u32> = rows.iter().map(|r| id(r, "mem_node")).collect();
    cpus.sort_unstable();
    cpus.dedup();
    mems.sort_unstable();
    mems.dedup();
    let mut header = vec!["<cpu node \\ mem node".to_string()];
    header.extend(mems.iter().map(|m| m.to_string()));
    let refs: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut t = Table::new(&refs);
    for &cpu in &cpus {
        let mut row = vec![cpu.to_string()];
        for &mem in &mems {
            let cell = rows
                .iter()
                .find(|r| id(r, "cpu_node") == cpu && id(r, "mem_node") == mem);
            row.push(cell.map_or("-".into(), |r| {
                let mark = if r.noise { "~" } else { "" };
                format!("{:+.1} ({:+.1}%){mark}", r.delta, r.percent.unwrap_or(0.0))
            }));
        }
        t.row(row);
    }
    format!("{title}: run {} minus run {}\n{}", c.b, c.a, t.render())
}
