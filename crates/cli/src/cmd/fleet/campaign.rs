//! `memfabric fleet run`: a campaign over a cluster through Slurm. One job per node,
//! each node's document stored under the campaign as it arrives, each node's fate
//! (ok, failed with why, cancelled) recorded, then the campaign's report.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use memfabric_model::fleet::FleetReport;
use memfabric_store::{now_unix_s, CampaignNode, Store};
use serde::Serialize;

use super::slurm::{quote, Job, Slurm};
use super::suite;
use crate::args::{FleetRunArgs, SuiteArg};
use crate::output::{print_all, store_location, Ctx, Interrupted, Status, Usage};

/// The default campaign name: fleet-YYYYMMDD-HHMMSS (UTC).
fn default_campaign() -> String {
    let now = now_unix_s();
    let date = crate::cmd::runs::date(now); // "YYYY-MM-DD HH:MM UTC"
    let digits: String = date.chars().filter(char::is_ascii_digit).collect();
    format!("fleet-{}-{}{:02}", &digits[..8], &digits[8..12], now % 60)
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

fn check_name(campaign: &str) -> Result<(), Usage> {
    let ok = !campaign.is_empty()
        && campaign.len() <= 100
        && campaign
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(Usage(format!(
            "campaign name {campaign:?}: use letters, digits, '.', '_' and '-' (it names the Slurm jobs)"
        )))
    }
}

/// A node's job while it runs.
struct Running {
    node: String,
    child: Child,
    started: Instant,
}

#[derive(Serialize)]
struct Campaign {
    campaign: String,
    /// `quick` or `full`: what each node ran.
    suite: &'static str,
    store: String,
    results: String,
    nodes: Vec<CampaignNode>,
    report: Option<FleetReport>,
}

struct Run<'a> {
    ctx: &'a Ctx,
    slurm: Slurm,
    store: Store,
    campaign: String,
    suite: SuiteArg,
    results: PathBuf,
    started: Instant,
    total: usize,
    done: usize,
    failed: usize,
    /// Seconds each finished job took, for the estimate of what is left.
    durations: Vec<f64>,
}

impl Run<'_> {
    fn record(
        &mut self,
        node: &str,
        status: &str,
        reason: Option<String>,
        run_id: Option<i64>,
    ) -> Result<()> {
        self.store.set_node(&CampaignNode {
            campaign: self.campaign.clone(),
            node: node.into(),
            status: status.into(),
            reason,
            run_id,
            updated_unix_s: now_unix_s(),
        })?;
        Ok(())
    }

    /// One progress line on stderr: counts, elapsed, an estimate of what is left.
    fn progress(&self, running: usize, waiting: usize, news: &str) {
        if self.ctx.progress.enabled() {
            let elapsed = self.started.elapsed().as_secs_f64();
            let left = if self.durations.is_empty() {
                "unknown".to_string()
            } else {
                let mean = self.durations.iter().sum::<f64>() / self.durations.len() as f64;
                let slots = running.max(1) as f64;
                format!(
                    "about {:.0} s",
                    mean * ((running + waiting) as f64 / slots).ceil()
                )
            };
            eprintln!(
                "[fleet {}] {}/{} done ({} failed), {running} running, {waiting} waiting; {elapsed:.0} s elapsed, {left} left{news}",
                self.campaign, self.done, self.total, self.failed
            );
        }
    }

    fn spawn(&mut self, node: &str, job: &Job<'_>) -> Result<Running> {
        let args = self.slurm.srun_args(node, job);
        let out = std::fs::File::create(self.results.join(format!("{node}.json.part")))?;
        let log = std::fs::File::create(self.results.join(format!("{node}.log")))?;
        let child = Command::new(&args[0])
            .args(&args[1..])
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(log)
            .spawn()
            .with_context(|| format!("starting {}", args[0]))?;
        self.record(node, "running", None, None)?;
        Ok(Running {
            node: node.into(),
            child,
            started: Instant::now(),
        })
    }

    /// A finished job: its document stored, or why there is none.
    fn finish(&mut self, r: &Running, exit: std::process::ExitStatus) -> Result<String> {
        self.done += 1;
        self.durations.push(r.started.elapsed().as_secs_f64());
        let part = self.results.join(format!("{}.json.part", r.node));
        let text = std::fs::read_to_string(&part).unwrap_or_default();
        let why = || failure_reason(&self.results.join(format!("{}.log", r.node)), exit);
        if text.trim().is_empty() {
            self.failed += 1;
            let reason = why();
            self.record(&r.node, "failed", Some(reason.clone()), None)?;
            return Ok(format!("{} failed: {reason}", r.node));
        }
        match super::ingest::new_run(&text, Some(&self.campaign)) {
            Ok(mut run) => {
                run.label = Some(r.node.clone());
                let id = self.store.save(&run)?;
                std::fs::rename(&part, self.results.join(format!("{}.json", r.node)))?;
                let note = (!exit.success())
                    .then(|| format!("stored; the run itself exited {exit} (a measurement failed)"));
                self.record(&r.node, "ok", note, Some(id))?;
                Ok(format!("{} stored as run {id}", r.node))
            }
            Err(reason) => {
                self.failed += 1;
                let reason = format!("its output is not a run document: {reason}; {}", why());
                self.record(&r.node, "failed", Some(reason.clone()), None)?;
                Ok(format!("{} failed: {reason}", r.node))
            }
        }
    }

    /// Ctrl-C: cancel the campaign's jobs, stop the sruns, record what did not finish.
    fn cancel(
        &mut self,
        running: Vec<Running>,
        waiting: VecDeque<String>,
        job_name: &str,
        sig: i32,
    ) -> Result<()> {
        let scancel = match self.slurm.cancel(job_name) {
            Ok(()) => format!("scancel --me --name={job_name}"),
            Err(e) => format!("scancel failed: {e}"),
        };
        for mut r in running {
            let _ = r.child.kill();
            let _ = r.child.wait();
            self.record(
                &r.node,
                "cancelled",
                Some(format!("cancelled by signal {sig} ({scancel})")),
                None,
            )?;
        }
        for node in waiting {
            self.record(
                &node,
                "cancelled",
                Some(format!("not started: cancelled by signal {sig}")),
                None,
            )?;
        }
        eprintln!(
            "memfabric: campaign {} cancelled ({scancel}); {} nodes finished and are kept; `memfabric fleet run --retry-failed {}` runs the others",
            self.campaign, self.done, self.campaign
        );
        Ok(())
    }
}

/// Why a job left no document: srun's last error lines, else its exit status.
fn failure_reason(log: &Path, exit: std::process::ExitStatus) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("error") || l.contains("CANCELLED") || l.contains("TIME LIMIT"))
        .collect();
    let mut uniq: Vec<&str> = Vec::new();
    for e in errors {
        if !uniq.contains(&e) {
            uniq.push(e);
        }
    }
    match uniq.len() {
        0 => format!("no document on srun's output; srun exited {exit}"),
        n => uniq[n.saturating_sub(2)..].join("; "),
    }
}

/// Which nodes, under which campaign.
fn nodes_of(a: &FleetRunArgs, slurm: &Slurm, store: Option<&Store>) -> Result<(String, Vec<String>)> {
    if let Some(c) = &a.retry_failed {
        let store = store.expect("a retry reads the store");
        let nodes = store.nodes(c)?;
        if nodes.is_empty() {
            return Err(Usage(format!("no campaign {c} with nodes in {}", store.location())).into());
        }
        let left = nodes
            .into_iter()
            .filter(|n| n.status != "ok")
            .map(|n| n.node)
            .collect();
        return Ok((c.clone(), left));
    }
    let campaign = a.campaign.clone().unwrap_or_else(default_campaign);
    let nodes = match &a.nodes {
        Some(list) => slurm.expand(list)?,
        None => slurm.all_nodes(a.partition.as_deref())?,
    };
    Ok((campaign, nodes))
}

/// The srun lines a campaign would submit, one per node, with where each output goes.
fn dry_run(slurm: &Slurm, nodes: &[String], job: &Job<'_>, results: &Path) -> Result<Status> {
    let lines: Vec<String> = nodes
        .iter()
        .map(|n| {
            let words: Vec<String> = slurm.srun_args(n, job).iter().map(|w| quote(w)).collect();
            let out = results.join(format!("{n}.json.part"));
            format!("{} > {}\n", words.join(" "), quote(&out.display().to_string()))
        })
        .collect();
    print_all(&lines.concat())?;
    Ok(Status::Ok)
}

pub fn run(ctx: &Ctx, a: &FleetRunArgs) -> Result<Status> {
    if let Some(c) = a.campaign.as_ref().or(a.retry_failed.as_ref()) {
        check_name(c)?;
    }
    if a.parallel == 0 || a.time == 0 {
        return Err(Usage("--parallel and --time must be at least 1".into()).into());
    }
    let slurm = Slurm::find()?;
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
    let (campaign, nodes) = nodes_of(a, &slurm, store.as_ref())?;
    let stored_suite = match &store {
        Some(s) => suite::of_campaign(s, &campaign)?,
        None => None,
    };
    let suite = suite::choose(a.suite, &campaign, stored_suite)?;
    let job_name = format!("memfabric-{campaign}");
    let job = Job {
        job_name: &job_name,
        partition: a.partition.as_deref(),
        minutes: a.time,
        memfabric: &memfabric,
        quick: suite == SuiteArg::Quick,
    };
    let results = a
        .results
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("memfabric-fleet-{campaign}")));
    if a.dry_run {
        return dry_run(&slurm, &nodes, &job, &results);
    }
    let store = store.expect("opened unless a dry run");
    if nodes.is_empty() {
        print_all(&format!(
            "Every node of campaign {campaign} stored a run: nothing to retry.\n"
        ))?;
        return Ok(Status::Ok);
    }
    std::fs::create_dir_all(&results).with_context(|| format!("creating {}", results.display()))?;
    let mut run = Run {
        ctx,
        slurm,
        store,
        campaign,
        suite,
        results,
        started: Instant::now(),
        total: nodes.len(),
        done: 0,
        failed: 0,
        durations: Vec::new(),
    };
    let waiting = run.submittable(nodes)?;
    run.drive(waiting, &job, a.parallel)?;
    conclude(ctx, a, run)
}

impl Run<'_> {
    /// The nodes to submit; those Slurm reports unavailable are recorded as failed.
    fn submittable(&mut self, nodes: Vec<String>) -> Result<VecDeque<String>> {
        let down = self.slurm.unavailable(&nodes).unwrap_or_default();
        let mut waiting = VecDeque::new();
        for n in nodes {
            match down.iter().find(|(d, _)| *d == n) {
                Some((_, state)) => {
                    self.done += 1;
                    self.failed += 1;
                    let why = format!("Slurm reports the node unavailable (state {state}); not submitted");
                    self.record(&n, "failed", Some(why), None)?;
                }
                None => waiting.push_back(n),
            }
        }
        Ok(waiting)
    }

    /// Submits the waiting nodes, at most `parallel` at once, until every job ended;
    /// a stop signal cancels the campaign.
    fn drive(&mut self, mut waiting: VecDeque<String>, job: &Job<'_>, parallel: usize) -> Result<()> {
        let mut running: Vec<Running> = Vec::new();
        let first = format!(": {} nodes to run as jobs named {}", waiting.len(), job.job_name);
        self.progress(0, waiting.len(), &first);
        let mut last_line = Instant::now();
        loop {
            if let Some(sig) = memfabric_measure::sys::stop_signal() {
                self.cancel(running, waiting, job.job_name, sig)?;
                return Err(Interrupted(sig).into());
            }
            while running.len() < parallel {
                let Some(node) = waiting.pop_front() else { break };
                let r = self.spawn(&node, job)?;
                running.push(r);
            }
            if running.is_empty() {
                return Ok(());
            }
            let mut i = 0;
            while i < running.len() {
                if let Some(exit) = running[i].child.try_wait()? {
                    let r = running.swap_remove(i);
                    let news = self.finish(&r, exit)?;
                    self.progress(running.len(), waiting.len(), &format!(": {news}"));
                    last_line = Instant::now();
                } else {
                    i += 1;
                }
            }
            if last_line.elapsed() > Duration::from_secs(30) {
                self.progress(running.len(), waiting.len(), "");
                last_line = Instant::now();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

/// The campaign's nodes and report, printed; the exit status.
fn conclude(ctx: &Ctx, a: &FleetRunArgs, run: Run<'_>) -> Result<Status> {
    let nodes = run.store.nodes(&run.campaign)?;
    let hosts = super::report::hosts(run.store.fleet(Some(&run.campaign))?)?;
    let report = if hosts.is_empty() {
        None
    } else {
        Some(memfabric_model::fleet::judge(&hosts, Default::default()))
    };
    let not_ok = nodes.iter().filter(|n| n.status != "ok").count();
    let outliers = report.as_ref().is_some_and(|r| !r.outliers.is_empty());
    let c = Campaign {
        campaign: run.campaign.clone(),
        suite: suite::name(run.suite),
        store: run.store.location().to_string(),
        results: run.results.display().to_string(),
        nodes,
        report,
    };
    if ctx.json {
        ctx.print_json("fleet-run", None, &c)?;
    } else {
        print_all(&text(&c))?;
    }
    Ok(Status::from_failures(
        not_ok > 0 || (a.fail_on_outliers && outliers),
    ))
}

fn text(c: &Campaign) -> String {
    let ok = c.nodes.iter().filter(|n| n.status == "ok").count();
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
            n.status.clone(),
            n.run_id.map_or("-".into(), |id| id.to_string()),
            n.reason.clone().unwrap_or_default(),
        ]);
    }
    out += &t.render();
    if c.nodes.iter().any(|n| n.status != "ok") {
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
