//! What a campaign needs of a batch scheduler: node names, which nodes can take a
//! job, one job per node whose standard output is the node's run document, and a
//! way to cancel a campaign's jobs. [`crate::Slurm`] is the real one; the tests of
//! [`crate::campaign`] drive a fake.

use std::path::Path;

use memfabric_model::Suite;

use crate::FleetError;

/// One node's job: what every node of a campaign runs.
#[derive(Debug, Clone)]
pub struct Job {
    /// The scheduler's job name, shared by the campaign's jobs (to cancel them).
    pub job_name: String,
    pub partition: Option<String>,
    /// The time limit; the scheduler ends a job that runs longer.
    pub minutes: u32,
    /// The memfabric binary on the nodes.
    pub memfabric: std::path::PathBuf,
    pub suite: Suite,
}

impl Job {
    /// The memfabric command line a node runs: its run document on stdout.
    pub fn memfabric_args(&self) -> Vec<String> {
        let mut v = vec![
            self.memfabric.display().to_string(),
            "--quiet".into(),
            "run".into(),
            "--json".into(),
            "--no-save".into(),
        ];
        v.extend(self.suite.run_flag().map(str::to_string));
        v
    }
}

/// How a job's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobExit {
    pub success: bool,
    /// In words, e.g. "exit status: 1".
    pub text: String,
}

impl From<std::process::ExitStatus> for JobExit {
    fn from(s: std::process::ExitStatus) -> JobExit {
        JobExit {
            success: s.success(),
            text: s.to_string(),
        }
    }
}

/// A job that was submitted and may still run.
pub trait Submitted {
    /// How it ended, once it has; None while it runs.
    fn try_wait(&mut self) -> Result<Option<JobExit>, FleetError>;
    /// Stops waiting for it and ends the local side of it (the scheduler's own
    /// cancel is [`Scheduler::cancel`]).
    fn kill(&mut self);
}

pub trait Scheduler {
    /// A node list in the scheduler's syntax (node[1-3],gpu7) as names.
    fn expand(&self, list: &str) -> Result<Vec<String>, FleetError>;
    /// Every node of a partition, or of the cluster.
    fn all_nodes(&self, partition: Option<&str>) -> Result<Vec<String>, FleetError>;
    /// The nodes that cannot run a job now (down, drained, failing), with their state.
    fn unavailable(&self, nodes: &[String]) -> Result<Vec<(String, String)>, String>;
    /// The command line that submits a node's job, as `--dry-run` shows it.
    fn command(&self, node: &str, job: &Job) -> Vec<String>;
    /// Submits a node's job: its standard output (the run document) goes to `out`,
    /// the scheduler's messages to `log`.
    fn submit(
        &mut self,
        node: &str,
        job: &Job,
        out: &Path,
        log: &Path,
    ) -> Result<Box<dyn Submitted>, FleetError>;
    /// Cancels every job of this user with the campaign's job name.
    fn cancel(&self, job_name: &str) -> Result<(), String>;
    /// Pause between two looks at the running jobs.
    fn poll_interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(100)
    }
}
