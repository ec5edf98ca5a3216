//! `memfabric fleet run`: flags into a [`memfabric_fleet::Campaign`] over Slurm,
//! then the campaign's nodes and report as text or JSON.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use memfabric_fleet::campaign::{check_limits, check_name, retry_nodes};
use memfabric_fleet::slurm::quote;
use memfabric_fleet::{Campaign, Job, Scheduler, Slurm};
use memfabric_model::fleet::{FleetReport, NodeStatus};
use memfabric_store::{now_unix_s, CampaignNode, Store};
use serde::Serialize;

use super::exit_error;
use crate::args::FleetRunArgs;
use crate::output::{print_all, store_location, Ctx, Status};

/// The default campaign name: fleet-YYYYMMDD-HHMMSS (UTC).
fn default_campaign() -> String {
    let now = now_unix_s();
    let date = crate::cmd::helpers::date(now); // "YYYY-MM-DD HH:MM UTC"
    let digits: String = date.chars().filter(char::is_ascii_digit).collect();
    format!("fleet-{}-{}{:02}", &digits[..8], &digits[8..12], now % 60)
}

#[derive(Serialize)]
struct Done {
    campaign: String,
    /// `quick` or `full`: what each node ran.
    suite: &'static str,
    store: String,
    results: String,
    nodes: Vec<CampaignNode>,
    report: Option<FleetReport>,
}

/// Which nodes, under which campaign.
fn nodes_of(a: &FleetRunArgs, slurm: &Slurm, store: Option<&Store>) -> Result<(String, Vec<String>)> {
    if let Some(c) = &a.retry_failed {
        let store = store.expect("a retry reads the store");
        return Ok((c.clone(), retry_nodes(store, c).map_err(exit_error)?));
    }
    let campaign = a.campaign.clone().unwrap_or_else(default_campaign);
    let nodes = match &a.nodes {
        Some(list) => slurm.expand(list),
        None => slurm.all_nodes(a.partition.as_deref()),
    };
    Ok((campaign, nodes.map_err(exit_error)?))
}

/// The srun lines a campaign would submit, one per node, with where each output goes.
fn dry_run(slurm: &Slurm, nodes: &[String], job: &Job, results: &Path) -> Result<Status> {
    let lines: Vec<String> = nodes
        .iter()
        .map(|n| {
            let words: Vec<String> = slurm.command(n, job).iter().map(|w| quote(w)).collect();
            let out = results.join(format!("{n}.json.part"));
            format!("{} > {}\n", words.join(" "), quote(&out.display().to_string()))
        })
        .collect();
    print_all(&lines.concat())?;
    Ok(Status::Ok)
}

pub fn run(ctx: &Ctx, a: &FleetRunArgs) -> Result<Status> {
    if let Some(c) = a.campaign.as_ref().or(a.retry_failed.as_ref()) {
        check_name(c).map_err(exit_error)?;
    }
    check_limits(a.parallel, a.time).map_err(exit_error)?;
    let mut slurm = Slurm::find().map_err(exit_error)?;
    let memfabric = match &a.memfabric {
        Some(p) => p.clone(),
        None => std::env::current_exe().context("finding this memfabric's path")?,
    };
    let store = if a.dry_run && a.retry_failed.is_none() {
        None
    } else {
        Some(Store::open_location(&store_location(
            ctx.store.as_deref(),
            None,
        )?)?)
    };
    let (name, nodes) = nodes_of(a, &slurm, store.as_ref())?;
    let stored_suite = match &store {
        Some(s) => memfabric_fleet::suite::of_campaign(s, &name).map_err(exit_error)?,
        None => None,
    };
    let suite = memfabric_fleet::suite::choose(a.suite, &name, stored_suite).map_err(exit_error)?;
    let campaign = Campaign {
        job: Job {
            job_name: format!("memfabric-{name}"),
            partition: a.partition.clone(),
            minutes: a.time,
            memfabric,
            suite,
        },
        results: a
            .results
            .clone()
            .unwrap_or_else(|| PathBuf::from(format!("memfabric-fleet-{name}"))),
        parallel: a.parallel,
        name,
    };
    if a.dry_run {
        return dry_run(&slurm, &nodes, &campaign.job, &campaign.results);
    }
    let mut store = store.expect("opened unless a dry run");
    if nodes.is_empty() {
        print_all(&format!(
            "Every node of campaign {} stored a run: nothing to retry.\n",
            campaign.name
        ))?;
        return Ok(Status::Ok);
    }
    memfabric_fleet::campaign::run(&mut slurm, &mut store, &campaign, nodes, &ctx.progress)
        .map_err(exit_error)?;
    conclude(ctx, a, &store, &campaign)
}

/// The campaign's nodes and report, printed; the exit status.
fn conclude(ctx: &Ctx, a: &FleetRunArgs, store: &Store, campaign: &Campaign) -> Result<Status> {
    let nodes = store.nodes(&campaign.name)?;
    let report = memfabric_fleet::campaign_report(store, &campaign.name).map_err(exit_error)?;
    let not_ok = nodes.iter().filter(|n| n.status != NodeStatus::Ok).count();
    let outliers = report.as_ref().is_some_and(|r| !r.outliers.is_empty());
    let done = Done {
        campaign: campaign.name.clone(),
        suite: campaign.job.suite.fleet_name(),
        store: store.location().to_string(),
        results: campaign.results.display().to_string(),
        nodes,
        report,
    };
    if ctx.json {
        ctx.print_json("fleet-run", None, &done)?;
    } else {
        print_all(&text(&done))?;
    }
    Ok(Status::from_failures(
        not_ok > 0 || (a.fail_on_outliers && outliers),
    ))
}

fn text(c: &Done) -> String {
    let ok = c.nodes.iter().filter(|n| n.status == NodeStatus::Ok).count();
    let mut out = format!(
        "Campaign {} (suite {}): {ok} of {} nodes stored a run in {} (documents and Slurm's messages in {})\n",
        c.campaign,
        c.suite,
        c.nodes.len(),
        c.store,
        c.results
    );
    let mut t = crate::table::Table::new(&["<node", "<status", "run", "<reason"]);
    for n in &c.nodes {
        t.row(vec![
            n.node.clone(),
            n.status.to_string(),
            n.run_id.map_or("-".into(), |id| id.to_string()),
            n.reason.clone().unwrap_or_default(),
        ]);
    }
    out += &t.render();
    if c.nodes.iter().any(|n| n.status != NodeStatus::Ok) {
        out += &format!(
            "Run the others again: memfabric fleet run --retry-failed {}\n",
            c.campaign
        );
    }
    match &c.report {
        Some(r) => out + "\n" + &super::report::text(r, &c.store, Some(&c.campaign)),
        None => out + "\nNo run stored: no report.\n",
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_default_campaign_is_a_valid_name_with_the_time() {
        let c = super::default_campaign();
        assert!(super::check_name(&c).is_ok(), "{c}");
        assert_eq!(c.len(), "fleet-20261203-011500".len(), "{c}");
    }
}
