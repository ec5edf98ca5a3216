//! `memfabric fleet report`: every host judged against its hardware class, as text
//! (one screen of summary first), JSON, CSV or HTML.

use anyhow::Result;
use memfabric_model::fleet::{FleetReport, Headline, HostRow, Rule};
use memfabric_store::csv_field;

use crate::args::FleetReportArgs;
use crate::cmd::helpers::write_atomically;
use crate::output::{print_all, Ctx, Status, Usage};
use crate::table::{printable, Table};

/// Outliers listed in the text; --json and --csv have all.
const TEXT_OUTLIERS: usize = 40;

/// Keeps only one class of a report.
fn only_class(mut r: FleetReport, key: &str) -> Result<FleetReport, Usage> {
    if !r.classes.iter().any(|c| c.key == key) {
        let known: Vec<&str> = r.classes.iter().map(|c| c.key.as_str()).collect();
        return Err(Usage(format!(
            "no hosts of class {key}; the classes are: {}",
            known.join(", ")
        )));
    }
    r.classes.retain(|c| c.key == key);
    r.outliers.retain(|o| o.class == key);
    r.drift.retain(|d| d.class == key);
    r.conflicts
        .retain(|c| c.classes.iter().any(|(class, _)| class == key));
    r.rows.retain(|h| h.class == key);
    r.hosts = r.rows.len();
    Ok(r)
}

pub fn report(ctx: &Ctx, a: &FleetReportArgs) -> Result<Status> {
    if !(a.worse_pct >= 0.0 && a.mads >= 0.0 && a.min_hosts >= 2) {
        return Err(Usage("--worse-pct and --mads must be 0 or more, --min-hosts at least 2".into()).into());
    }
    let mut store = crate::cmd::helpers::open(ctx)?;
    memfabric_fleet::backfill(&mut store, &ctx.progress).map_err(super::exit_error)?;
    let rule = Rule {
        worse_pct: a.worse_pct,
        mads: a.mads,
        min_hosts: a.min_hosts,
        ..Rule::default()
    };
    let report = memfabric_fleet::report(&store, a.campaign.as_deref(), rule).map_err(super::exit_error)?;
    let Some(mut r) = report else {
        let what = a
            .campaign
            .as_ref()
            .map_or(String::new(), |c| format!(" of campaign {c}"));
        return Err(Usage(format!(
            "no runs{what} with a headline figure in {}: store documents with `memfabric fleet ingest`",
            store.location()
        ))
        .into());
    };
    if let Some(c) = &a.campaign {
        r.missing = memfabric_fleet::hosts::missing(&store.nodes(c)?);
    }
    if let Some(key) = &a.class {
        r = only_class(r, key)?;
    }
    if let Some(path) = &a.html {
        let title = a
            .campaign
            .as_ref()
            .map_or("all campaigns".to_string(), |c| format!("campaign {c}"));
        write_atomically(path, &memfabric_report::render_fleet(&r, &title))?;
        eprintln!("memfabric: wrote {}", path.display());
    }
    if ctx.json {
        ctx.print_json("fleet-report", None, &r)?;
    } else if a.csv {
        print_all(&csv(&r))?;
    } else {
        print_all(&text(&r, store.location(), a.campaign.as_deref()))?;
    }
    Ok(Status::from_failures(
        a.fail_on_outliers && !(r.outliers.is_empty() && r.missing.is_empty()),
    ))
}

/// The headlines some class measured, in their fixed order.
fn measured(r: &FleetReport) -> Vec<Headline> {
    Headline::ALL
        .into_iter()
        .filter(|h| {
            r.classes
                .iter()
                .any(|c| c.stats.iter().any(|s| s.headline == h.name()))
        })
        .collect()
}

/// A figure in at most 9 characters, whatever its value: a corrupt or hostile
/// figure must not widen the table past the screen.
fn num(v: f64) -> String {
    if !v.is_finite() || v.abs() >= 1e7 || (v != 0.0 && v.abs() < 1e-3) {
        format!("{v:.2e}")
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.1}")
    }
}

/// A percentage as `num` bounds it.
fn pct(v: f64) -> String {
    format!("{}%", num(v))
}

pub fn text(r: &FleetReport, store: &str, campaign: Option<&str>) -> String {
    let outlier_hosts: usize = r.classes.iter().map(|c| c.outlier_hosts).sum();
    let campaign = campaign.map_or(String::new(), |c| format!(", campaign {c}"));
    let mut out = format!(
        "Fleet: {} hosts in {} classes, {} outliers on {outlier_hosts} hosts ({store}{campaign})\nRule: {}.\n\n",
        r.hosts,
        r.classes.len(),
        r.outliers.len(),
        r.rule_text
    );
    let heads = measured(r);
    let mut header = vec!["<class", "hosts", "outliers"];
    header.extend(heads.iter().map(|h| h.title()));
    let mut t = Table::new(&header);
    for c in &r.classes {
        let outliers = if c.judged {
            c.outlier_hosts.to_string()
        } else {
            "not judged".into()
        };
        let mut row = vec![c.key.clone(), c.hosts.to_string(), outliers];
        for h in &heads {
            let s = c.stats.iter().find(|s| s.headline == h.name());
            row.push(s.map_or("-".into(), |s| format!("{} ±{}", num(s.median), num(s.mad))));
        }
        t.row(row);
    }
    out += "Class medians ± scaled MAD:\n";
    out += &t.render();
    for c in r.classes.iter().filter(|c| !c.folded.is_empty()) {
        let folded: Vec<String> = c
            .folded
            .iter()
            .map(|f| format!("{} ({} host(s))", printable(&f.value), f.hosts))
            .collect();
        out += &format!("Judged with {}: {}\n", printable(&c.key), folded.join(", "));
    }
    if !r.missing.is_empty() {
        let nodes: Vec<String> = r
            .missing
            .iter()
            .map(|m| {
                format!(
                    "{} ({}: {})",
                    printable(&m.node),
                    m.status,
                    printable(m.reason.as_deref().unwrap_or("no reason recorded"))
                )
            })
            .collect();
        out += &format!(
            "\nNodes of the campaign without a run ({}): {}\n",
            nodes.len(),
            nodes.join("; ")
        );
    }
    out += &conflicts_text(r);
    out += &outliers_text(r);
    out += &drift_text(r);
    out
}

/// Host ids seen with two hardware classes in one campaign.
fn conflicts_text(r: &FleetReport) -> String {
    if r.conflicts.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\nIdentity conflicts ({}): a host id with more than one hardware class in a campaign; its newest run alone stands for it:\n",
        r.conflicts.len()
    );
    for c in &r.conflicts {
        let classes: Vec<String> = c
            .classes
            .iter()
            .map(|(class, runs)| {
                let runs: Vec<String> = runs.iter().map(i64::to_string).collect();
                format!("{class} (runs {})", runs.join(", "))
            })
            .collect();
        let campaign = c
            .campaign
            .as_deref()
            .map_or(String::new(), |c| format!(" in campaign {c}"));
        out += &format!(
            "  {}{}: {}\n",
            printable(&c.host_id),
            printable(&campaign),
            printable(&classes.join("; "))
        );
    }
    out
}

/// One line per outlier host: its outlying figures and why it differs from its class.
fn outliers_text(r: &FleetReport) -> String {
    if r.outliers.is_empty() {
        return "\nNo outliers.\n".into();
    }
    let hosts: Vec<&HostRow> = r.rows.iter().filter(|h| h.outlier).collect();
    let shown = hosts.len().min(TEXT_OUTLIERS);
    let out = format!(
        "\nOutlier hosts ({shown} of {}; every figure in --json and --csv):\n",
        hosts.len()
    );
    let mut t = Table::new(&[
        "<host",
        "<measured, stored",
        "<worse than its class median",
        "<likely cause",
    ]);
    for h in &hosts[..shown] {
        let figures: Vec<String> = r
            .outliers
            .iter()
            .filter(|o| o.run_id == h.run_id)
            .map(|o| format!("{} {}", o.headline, pct(o.worse_pct)))
            .collect();
        let when = format!(
            "{}, {}",
            memfabric_model::units::utc(h.measured_unix_s),
            memfabric_model::units::utc_date(h.stored_unix_s)
        );
        t.row(vec![
            h.name.clone(),
            when,
            figures.join(", "),
            h.causes.join("; "),
        ]);
    }
    out + &t.render()
}

fn drift_text(r: &FleetReport) -> String {
    if r.drift.is_empty() {
        return "\nNo configuration drift: every class's hosts record the same facts.\n".into();
    }
    let mut t = Table::new(&["<class", "<fact", "<values (hosts)"]);
    for d in &r.drift {
        let values: Vec<String> = d
            .values
            .iter()
            .map(|v| format!("{} ({})", v.value, v.hosts))
            .collect();
        t.row(vec![d.class.clone(), d.fact.clone(), values.join(", ")]);
    }
    "\nConfiguration drift (facts with more than one value in a class):\n".to_string() + &t.render()
}

/// One row per host and headline figure.
pub fn csv(r: &FleetReport) -> String {
    let outliers = r.outlying();
    let mut out =
        String::from("class,host,host_id,run_id,figure,value,class_median,worse_pct,outlier,causes,measured_unix_s,stored_unix_s\n");
    for h in &r.rows {
        for (name, v) in &h.values {
            let class = r.classes.iter().find(|c| c.key == h.class);
            let stats = class.and_then(|c| c.stats.iter().find(|s| &s.headline == name));
            let outlier = outliers.contains(&(h.run_id, name.as_str()));
            let cells = [
                csv_field(&h.class),
                csv_field(&h.name),
                csv_field(h.host_id.as_deref().unwrap_or("")),
                h.run_id.to_string(),
                name.clone(),
                v.to_string(),
                stats.map_or(String::new(), |s| s.median.to_string()),
                h.worse_pct.get(name).map_or(String::new(), |w| format!("{w:.3}")),
                outlier.to_string(),
                csv_field(&if outlier {
                    h.causes.join("; ")
                } else {
                    String::new()
                }),
                h.measured_unix_s.to_string(),
                h.stored_unix_s.to_string(),
            ];
            out += &cells.join(",");
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfabric_model::fleet::{judge, FleetFacts, FleetHost};
    use memfabric_topo::HardwareClass;

    /// Six hosts of one class and two of another; node5 has lost a DIMM, node2 runs
    /// an older BIOS.
    fn fleet() -> FleetReport {
        let host = |i: usize, triad: f64, ns: f64, channels: usize, bios: &str| {
            let mut facts = FleetFacts {
                class: Some(HardwareClass {
                    cpu_model: Some("CPU A".into()),
                    sockets: 2,
                    cores: 64,
                    channels_populated: Some(channels),
                    dimm_mt_s: Some(4800),
                    numa_nodes: 2,
                    key: format!("CPU A/2S/64C/{channels}ch/4800MT/2N"),
                }),
                dimms: Some(channels),
                ..FleetFacts::default()
            };
            facts.settings.insert("bios_version".into(), bios.into());
            facts.headlines.insert("triad_per_node_gb_s".into(), triad);
            facts.headlines.insert("local_latency_ns".into(), ns);
            FleetHost {
                run_id: i as i64,
                measured_unix_s: 1_796_000_000 + i as u64,
                stored_unix_s: 1_796_100_000,
                name: format!("node{i}"),
                host_id: Some(format!("machine-id:{i:016x}")),
                facts,
            }
        };
        let mut hosts: Vec<FleetHost> = (0..6)
            .map(|i| host(i, 200.0 + i as f64, 100.0 + (i % 2) as f64, 16, "1.2"))
            .collect();
        hosts[5] = host(5, 150.0, 101.0, 15, "1.2");
        hosts[2] = host(2, 201.0, 131.0, 16, "0.9");
        let mut small = host(6, 90.0, 120.0, 8, "3.0");
        small.facts.class.as_mut().unwrap().cpu_model = Some("CPU B".into());
        small.facts.class.as_mut().unwrap().key = "CPU B/1S/32C/8ch/4800MT/1N".into();
        hosts.push(small);
        judge(&hosts, Rule::default())
    }

    #[test]
    fn figures_and_percentages_stay_narrow_whatever_their_value() {
        for v in [
            1e308,
            -1e308,
            1e-300,
            123_456_789.0,
            f64::NAN,
            f64::INFINITY,
            0.0,
            99.94,
            12_345.6,
        ] {
            assert!(num(v).len() <= 9, "{v}: {}", num(v));
            assert!(pct(v).len() <= 10, "{v}: {}", pct(v));
        }
        assert_eq!(num(1e308), "1.00e308");
        assert_eq!(num(12_345.6), "12346");
        assert_eq!(pct(29.703), "29.7%");
    }

    #[test]
    fn text_csv_and_html_of_a_small_fleet() {
        let r = fleet();
        assert_eq!(r.outliers.len(), 2);
        insta::assert_snapshot!("fleet_text", text(&r, "runs.sqlite", Some("acceptance")));
        insta::assert_snapshot!("fleet_csv", csv(&r));
        insta::assert_snapshot!(
            "fleet_html",
            memfabric_report::render_fleet(&r, "campaign acceptance")
        );
    }
}
