//! A campaign over a cluster: one job per node through a [`Scheduler`], each
//! node's document stored under the campaign as it arrives, each node's fate (ok,
//! failed with why, cancelled) recorded in the store as it happens.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::Instant;

use memfabric_model::fleet::NodeStatus;
use memfabric_store::{now_unix_s, CampaignNode, Store};

use crate::scheduler::{Job, JobExit, Scheduler, Submitted};
use crate::{FleetError, Observer};

/// Seconds between two progress lines while no job ends.
const QUIET_LINE_S: f64 = 30.0;

/// What a campaign runs, where, and how many nodes at once.
#[derive(Debug, Clone)]
pub struct Campaign {
    pub name: String,
    pub job: Job,
    /// Where each node's document (`NODE.json`) and the scheduler's messages
    /// (`NODE.log`) are kept.
    pub results: PathBuf,
    /// Jobs submitted at once; the others wait their turn.
    pub parallel: usize,
}

/// A campaign's counts, each time a job ends (and every 30 s while none does).
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignProgress {
    pub campaign: String,
    pub done: usize,
    pub total: usize,
    pub failed: usize,
    pub running: usize,
    pub waiting: usize,
    pub elapsed_s: f64,
    /// Mean job time x rounds of jobs left; None before a job ended.
    pub left_s: Option<f64>,
    /// What just happened ("node3 stored as run 7"); empty on a periodic line.
    pub news: String,
}

/// How a campaign's submission ended (the nodes' fates are in the store).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CampaignEnd {
    pub done: usize,
    pub failed: usize,
}

/// A campaign name: it names the scheduler's jobs, so only a safe set of characters.
pub fn check_name(campaign: &str) -> Result<(), FleetError> {
    let ok = !campaign.is_empty()
        && campaign.len() <= 100
        && campaign
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(FleetError::Usage(format!(
            "campaign name {campaign:?}: use letters, digits, '.', '_' and '-' (it names the Slurm jobs)"
        )))
    }
}

/// Jobs at once and a job's time limit: each at least 1.
pub fn check_limits(parallel: usize, minutes: u32) -> Result<(), FleetError> {
    if parallel == 0 || minutes == 0 {
        return Err(FleetError::Usage(
            "--parallel and --time must be at least 1".into(),
        ));
    }
    Ok(())
}

/// The nodes of a stored campaign that did not store a run.
pub fn retry_nodes(store: &Store, campaign: &str) -> Result<Vec<String>, FleetError> {
    let nodes = store.nodes(campaign)?;
    if nodes.is_empty() {
        return Err(FleetError::Usage(format!(
            "no campaign {campaign} with nodes in {}",
            store.location()
        )));
    }
    Ok(nodes
        .into_iter()
        .filter(|n| n.status != NodeStatus::Ok)
        .map(|n| n.node)
        .collect())
}

/// Why a job left no document: the scheduler's last error lines, else its exit.
pub fn failure_reason(log: &Path, exit: &JobExit) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let mut uniq: Vec<&str> = Vec::new();
    let errors = text
        .lines()
        .filter(|l| l.contains("error") || l.contains("CANCELLED") || l.contains("TIME LIMIT"));
    for e in errors {
        if !uniq.contains(&e) {
            uniq.push(e);
        }
    }
    match uniq.len() {
        0 => format!("no document on srun's output; srun exited {}", exit.text),
        n => uniq[n.saturating_sub(2)..].join("; "),
    }
}

/// A node's job while it runs.
struct Running {
    node: String,
    job: Box<dyn Submitted>,
    started: Instant,
}

/// One submission of a campaign: the state between its first job and its last.
struct Drive<'a> {
    campaign: &'a Campaign,
    store: &'a mut Store,
    obs: &'a dyn Observer,
    started: Instant,
    total: usize,
    done: usize,
    failed: usize,
    /// Seconds each finished job took, for the estimate of what is left.
    durations: Vec<f64>,
}

/// Runs `nodes` of the campaign: those the scheduler reports unavailable are
/// recorded failed without a job; the others run, at most `parallel` at once, each
/// recorded as it ends. A stop signal cancels the campaign's jobs, records the
/// unfinished nodes as cancelled and ends in [`FleetError::Interrupted`].
pub fn run(
    scheduler: &mut dyn Scheduler,
    store: &mut Store,
    campaign: &Campaign,
    nodes: Vec<String>,
    obs: &dyn Observer,
) -> Result<CampaignEnd, FleetError> {
    check_limits(campaign.parallel, campaign.job.minutes)?;
    std::fs::create_dir_all(&campaign.results)
        .map_err(FleetError::io(format!("creating {}", campaign.results.display())))?;
    let mut d = Drive {
        campaign,
        store,
        obs,
        started: Instant::now(),
        total: nodes.len(),
        done: 0,
        failed: 0,
        durations: Vec::new(),
    };
    let waiting = d.submittable(&*scheduler, nodes)?;
    d.drive(scheduler, waiting)?;
    Ok(CampaignEnd {
        done: d.done,
        failed: d.failed,
    })
}

impl Drive<'_> {
    fn record(
        &mut self,
        node: &str,
        status: NodeStatus,
        reason: Option<String>,
        run_id: Option<i64>,
    ) -> Result<(), FleetError> {
        self.store.set_node(&CampaignNode {
            campaign: self.campaign.name.clone(),
            node: node.into(),
            status,
            reason,
            run_id,
            updated_unix_s: now_unix_s(),
        })?;
        Ok(())
    }

    fn progress(&self, running: usize, waiting: usize, news: String) {
        let left_s = (!self.durations.is_empty()).then(|| {
            let mean = self.durations.iter().sum::<f64>() / self.durations.len() as f64;
            mean * ((running + waiting) as f64 / running.max(1) as f64).ceil()
        });
        self.obs.campaign(&CampaignProgress {
            campaign: self.campaign.name.clone(),
            done: self.done,
            total: self.total,
            failed: self.failed,
            running,
            waiting,
            elapsed_s: self.started.elapsed().as_secs_f64(),
            left_s,
            news,
        });
    }

    fn path(&self, node: &str, ext: &str) -> PathBuf {
        self.campaign.results.join(format!("{node}.{ext}"))
    }

    /// The nodes to submit; those the scheduler reports unavailable are recorded failed.
    fn submittable(
        &mut self,
        scheduler: &dyn Scheduler,
        nodes: Vec<String>,
    ) -> Result<VecDeque<String>, FleetError> {
        let down = scheduler.unavailable(&nodes).unwrap_or_default();
        let mut waiting = VecDeque::new();
        for n in nodes {
            match down.iter().find(|(d, _)| *d == n) {
                Some((_, state)) => {
                    self.done += 1;
                    let why = format!("Slurm reports the node unavailable (state {state}); not submitted");
                    self.fail(&n, why)?;
                }
                None => waiting.push_back(n),
            }
        }
        Ok(waiting)
    }

    fn spawn(&mut self, scheduler: &mut dyn Scheduler, node: &str) -> Result<Running, FleetError> {
        let (out, log) = (self.path(node, "json.part"), self.path(node, "log"));
        let job = scheduler.submit(node, &self.campaign.job, &out, &log)?;
        self.record(node, NodeStatus::Running, None, None)?;
        Ok(Running {
            node: node.into(),
            job,
            started: Instant::now(),
        })
    }

    /// A node that stored no run: counted, recorded with why; the progress news.
    fn fail(&mut self, node: &str, reason: String) -> Result<String, FleetError> {
        self.failed += 1;
        let news = format!("{node} failed: {reason}");
        self.record(node, NodeStatus::Failed, Some(reason), None)?;
        Ok(news)
    }

    /// A finished job: its document stored, or why there is none.
    fn finish(&mut self, r: &Running, exit: &JobExit) -> Result<String, FleetError> {
        self.done += 1;
        self.durations.push(r.started.elapsed().as_secs_f64());
        let part = self.path(&r.node, "json.part");
        let size = std::fs::metadata(&part).map_or(0, |m| m.len());
        if size > crate::ingest::MAX_DOCUMENT_BYTES as u64 {
            let reason = format!(
                "its output is {size} bytes, over the {} MiB a document may be",
                crate::ingest::MAX_DOCUMENT_BYTES >> 20
            );
            return self.fail(&r.node, reason);
        }
        let text = std::fs::read_to_string(&part).unwrap_or_default();
        let log = self.path(&r.node, "log");
        let why = || failure_reason(&log, exit);
        if text.trim().is_empty() {
            return self.fail(&r.node, why());
        }
        match crate::ingest::new_run(&text, Some(&self.campaign.name)) {
            Ok(mut run) => {
                run.label = Some(r.node.clone());
                let id = self.store.save(&run)?;
                let kept = self.path(&r.node, "json");
                std::fs::rename(&part, &kept)
                    .map_err(FleetError::io(format!("keeping {}", kept.display())))?;
                let note = (!exit.success).then(|| {
                    format!(
                        "stored; the run itself exited {} (a measurement failed)",
                        exit.text
                    )
                });
                self.record(&r.node, NodeStatus::Ok, note, Some(id))?;
                Ok(format!("{} stored as run {id}", r.node))
            }
            Err(reason) => {
                let reason = format!("its output is not a run document: {reason}; {}", why());
                self.fail(&r.node, reason)
            }
        }
    }

    /// Submits the waiting nodes, at most `parallel` at once, until every job ended;
    /// a stop signal cancels the campaign.
    fn drive(
        &mut self,
        scheduler: &mut dyn Scheduler,
        mut waiting: VecDeque<String>,
    ) -> Result<(), FleetError> {
        let mut running: Vec<Running> = Vec::new();
        let job_name = &self.campaign.job.job_name;
        self.progress(
            0,
            waiting.len(),
            format!("{} nodes to run as jobs named {job_name}", waiting.len()),
        );
        let mut last_line = Instant::now();
        loop {
            if let Some(signal) = self.obs.stop_signal() {
                return Err(self.cancel(&*scheduler, running, waiting, signal)?);
            }
            while running.len() < self.campaign.parallel {
                let Some(node) = waiting.pop_front() else { break };
                let r = self.spawn(scheduler, &node)?;
                running.push(r);
            }
            if running.is_empty() {
                return Ok(());
            }
            let mut i = 0;
            while i < running.len() {
                if let Some(exit) = running[i].job.try_wait()? {
                    let r = running.swap_remove(i);
                    let news = self.finish(&r, &exit)?;
                    self.progress(running.len(), waiting.len(), news);
                    last_line = Instant::now();
                } else {
                    i += 1;
                }
            }
            if last_line.elapsed().as_secs_f64() > QUIET_LINE_S {
                self.progress(running.len(), waiting.len(), String::new());
                last_line = Instant::now();
            }
            std::thread::sleep(scheduler.poll_interval());
        }
    }

    /// A stop signal: cancel the campaign's jobs, stop waiting for them, record what
    /// did not finish; the error that ends the campaign, saying what was kept.
    fn cancel(
        &mut self,
        scheduler: &dyn Scheduler,
        running: Vec<Running>,
        waiting: VecDeque<String>,
        signal: i32,
    ) -> Result<FleetError, FleetError> {
        let job_name = &self.campaign.job.job_name;
        let scancel = match scheduler.cancel(job_name) {
            Ok(()) => format!("scancel --me --name={job_name}"),
            Err(e) => format!("scancel failed: {e}"),
        };
        for mut r in running {
            r.job.kill();
            let why = format!("cancelled by signal {signal} ({scancel})");
            self.record(&r.node, NodeStatus::Cancelled, Some(why), None)?;
        }
        for node in waiting {
            let why = format!("not started: cancelled by signal {signal}");
            self.record(&node, NodeStatus::Cancelled, Some(why), None)?;
        }
        let name = &self.campaign.name;
        Ok(FleetError::Interrupted {
            signal,
            text: format!(
                "campaign {name} cancelled ({scancel}); {} nodes finished and are kept; `memfabric fleet run --retry-failed {name}` runs the others",
                self.done
            ),
        })
    }
}
