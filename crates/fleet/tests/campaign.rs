//! The campaign's paths on a fake scheduler: every fate a node can meet (stored,
//! node death, time limit, down, garbage output), a retry of the failed nodes, and a
//! stop signal that cancels running and waiting jobs.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use memfabric_fleet::campaign::{check_name, retry_nodes, run};
use memfabric_fleet::{
    Campaign, CampaignEnd, CampaignProgress, FleetError, Job, JobExit, Observer, Scheduler, Silent, Submitted,
};
use memfabric_model::fleet::NodeStatus;
use memfabric_model::Suite;
use memfabric_store::Store;

mod common;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Fate {
    Stored,
    /// Stored, but the run itself exited 1 (a measurement failed).
    StoredFailing,
    /// srun exits 0 after "Node failure", with no document.
    NodeDies,
    TimeLimit,
    Garbage,
    Down,
    /// Runs until killed.
    Hangs,
}

/// Writes what a node's srun would, at submission; ends after one look.
struct FakeJob {
    fate: Fate,
    looks: usize,
    killed: std::sync::Arc<Mutex<Vec<String>>>,
    node: String,
}

impl Submitted for FakeJob {
    fn try_wait(&mut self) -> Result<Option<JobExit>, FleetError> {
        self.looks += 1;
        let exit = |code: i32| JobExit {
            success: code == 0,
            text: format!("exit status: {code}"),
        };
        Ok(match self.fate {
            Fate::Hangs => None,
            _ if self.looks < 2 => None,
            Fate::StoredFailing | Fate::TimeLimit => Some(exit(1)),
            _ => Some(exit(0)),
        })
    }

    fn kill(&mut self) {
        self.killed.lock().unwrap().push(self.node.clone());
    }
}

struct Fake {
    fates: BTreeMap<String, Fate>,
    document: serde_json::Value,
    submitted: Vec<String>,
    cancelled: Mutex<Vec<String>>,
    killed: std::sync::Arc<Mutex<Vec<String>>>,
}

impl Fake {
    fn new(fates: &[(&str, Fate)]) -> Fake {
        Fake {
            fates: fates.iter().map(|(n, f)| (n.to_string(), *f)).collect(),
            document: run_document(),
            submitted: Vec::new(),
            cancelled: Mutex::new(Vec::new()),
            killed: Default::default(),
        }
    }

    /// The node's run document: the stored 0.4.0 run, as that node's.
    fn document_of(&self, node: &str) -> String {
        let mut d = self.document.clone();
        d["environment"]["hostname"] = node.into();
        d["environment"]["scheduler_node"] = node.into();
        d.to_string()
    }
}

impl Scheduler for Fake {
    fn expand(&self, list: &str) -> Result<Vec<String>, FleetError> {
        Ok(list.split(',').map(str::to_string).collect())
    }

    fn all_nodes(&self, _partition: Option<&str>) -> Result<Vec<String>, FleetError> {
        Ok(self.fates.keys().cloned().collect())
    }

    fn unavailable(&self, nodes: &[String]) -> Result<Vec<(String, String)>, String> {
        Ok(nodes
            .iter()
            .filter(|n| self.fates[*n] == Fate::Down)
            .map(|n| (n.clone(), "down*".to_string()))
            .collect())
    }

    fn command(&self, node: &str, job: &Job) -> Vec<String> {
        let mut v = vec!["fake".to_string(), node.to_string()];
        v.extend(job.memfabric_args());
        v
    }

    fn submit(
        &mut self,
        node: &str,
        _job: &Job,
        out: &Path,
        log: &Path,
    ) -> Result<Box<dyn Submitted>, FleetError> {
        let fate = self.fates[node];
        self.submitted.push(node.into());
        let (stdout, stderr) = match fate {
            Fate::Stored | Fate::StoredFailing => (self.document_of(node), String::new()),
            Fate::NodeDies => (
                String::new(),
                format!("srun: error: Node failure on {node}\nsrun: error: {node}: task 0: Killed\n"),
            ),
            Fate::TimeLimit => (
                String::new(),
                format!("slurmstepd: error: *** STEP 7.0 ON {node} CANCELLED AT 2026-12-04T10:00:00 DUE TO TIME LIMIT ***\n"),
            ),
            Fate::Garbage => ("Segmentation fault\n".into(), String::new()),
            Fate::Down | Fate::Hangs => (String::new(), String::new()),
        };
        std::fs::write(out, stdout).unwrap();
        std::fs::write(log, stderr).unwrap();
        Ok(Box::new(FakeJob {
            fate,
            looks: 0,
            killed: self.killed.clone(),
            node: node.into(),
        }))
    }

    fn cancel(&self, job_name: &str) -> Result<(), String> {
        self.cancelled.lock().unwrap().push(job_name.into());
        Ok(())
    }

    fn poll_interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(1)
    }
}

/// The run document memfabric 0.4.0 stored on the development machine.
fn run_document() -> serde_json::Value {
    serde_json::from_str(&common::fixture_documents()[0]).unwrap()
}

/// Records the progress it is shown; asks to stop once `stop_after` jobs ended.
#[derive(Default)]
struct Watcher {
    lines: Mutex<Vec<CampaignProgress>>,
    stop_after: Option<usize>,
    asked: AtomicUsize,
}

impl Observer for Watcher {
    fn campaign(&self, p: &CampaignProgress) {
        self.lines.lock().unwrap().push(p.clone());
    }

    fn stop_signal(&self) -> Option<i32> {
        self.asked.fetch_add(1, Ordering::Relaxed);
        let done = self.lines.lock().unwrap().last().map_or(0, |p| p.done);
        self.stop_after.filter(|&n| done >= n).map(|_| 15)
    }
}

fn campaign(dir: &Path, parallel: usize) -> Campaign {
    Campaign {
        name: "acc".into(),
        job: Job {
            job_name: "memfabric-acc".into(),
            partition: None,
            minutes: 30,
            memfabric: "/usr/bin/memfabric".into(),
            suite: Suite::Quick,
        },
        results: dir.join("results"),
        parallel,
    }
}

fn nodes(list: &[&str]) -> Vec<String> {
    list.iter().map(|n| n.to_string()).collect()
}

fn statuses(store: &Store) -> Vec<(String, NodeStatus, String)> {
    let nodes = store.nodes("acc").unwrap();
    nodes
        .into_iter()
        .map(|n| (n.node, n.status, n.reason.unwrap_or_default()))
        .collect()
}

#[test]
fn every_node_ends_stored_or_failed_with_the_schedulers_reason() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.sqlite")).unwrap();
    let mut fake = Fake::new(&[
        ("n1", Fate::Stored),
        ("n2", Fate::NodeDies),
        ("n3", Fate::TimeLimit),
        ("n4", Fate::Down),
        ("n5", Fate::Garbage),
        ("n6", Fate::StoredFailing),
    ]);
    let c = campaign(dir.path(), 2);
    let all = nodes(&["n1", "n2", "n3", "n4", "n5", "n6"]);
    let w = Watcher::default();
    let end = run(&mut fake, &mut store, &c, all, &w).unwrap();
    assert_eq!(end, CampaignEnd { done: 6, failed: 4 });
    assert_eq!(
        fake.submitted,
        nodes(&["n1", "n2", "n3", "n5", "n6"]),
        "a down node is not submitted"
    );
    let s = statuses(&store);
    assert_eq!((s[0].1, s[0].2.as_str()), (NodeStatus::Ok, ""));
    assert_eq!(s[1].1, NodeStatus::Failed);
    assert_eq!(
        s[1].2,
        "srun: error: Node failure on n2; srun: error: n2: task 0: Killed"
    );
    assert!(s[2].2.ends_with("DUE TO TIME LIMIT ***"), "{}", s[2].2);
    assert_eq!(
        s[3].2,
        "Slurm reports the node unavailable (state down*); not submitted"
    );
    assert!(
        s[4].2
            .starts_with("its output is not a run document: it is not JSON"),
        "{}",
        s[4].2
    );
    assert!(
        s[4].2
            .ends_with("no document on srun's output; srun exited exit status: 0"),
        "{}",
        s[4].2
    );
    assert_eq!(
        (s[5].1, s[5].2.as_str()),
        (
            NodeStatus::Ok,
            "stored; the run itself exited exit status: 1 (a measurement failed)"
        )
    );
    // Stored runs are labelled with their node, kept as NODE.json, and judged as hosts.
    let ok = store.nodes("acc").unwrap();
    let run_id = ok[0].run_id.unwrap();
    assert_eq!(store.summary(run_id).unwrap().label.as_deref(), Some("n1"));
    assert!(c.results.join("n1.json").is_file() && !c.results.join("n1.json.part").exists());
    let report = memfabric_fleet::campaign_report(&store, "acc").unwrap().unwrap();
    assert_eq!(report.hosts, 2);
    assert_eq!(
        memfabric_fleet::hosts::missing(&store.nodes("acc").unwrap()).len(),
        4
    );
    // Progress: a first line, then one per ended job, with an estimate once one ended.
    let lines = w.lines.lock().unwrap();
    assert_eq!(lines[0].news, "5 nodes to run as jobs named memfabric-acc");
    assert_eq!((lines[0].done, lines[0].failed, lines[0].waiting), (1, 1, 5));
    assert_eq!(lines[0].left_s, None);
    assert_eq!(lines.len(), 6);
    assert!(lines[1].left_s.is_some());
    assert_eq!(lines.last().unwrap().done, 6);
}

#[test]
fn a_retry_runs_only_the_nodes_without_a_run() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.sqlite")).unwrap();
    let c = campaign(dir.path(), 4);
    let mut first = Fake::new(&[
        ("n1", Fate::Stored),
        ("n2", Fate::NodeDies),
        ("n3", Fate::TimeLimit),
    ]);
    run(&mut first, &mut store, &c, nodes(&["n1", "n2", "n3"]), &Silent).unwrap();
    let left = retry_nodes(&store, "acc").unwrap();
    assert_eq!(left, nodes(&["n2", "n3"]));
    let mut second = Fake::new(&[("n2", Fate::Stored), ("n3", Fate::Stored)]);
    let end = run(&mut second, &mut store, &c, left, &Silent).unwrap();
    assert_eq!(end, CampaignEnd { done: 2, failed: 0 });
    assert_eq!(second.submitted, nodes(&["n2", "n3"]));
    assert!(statuses(&store).iter().all(|(_, s, _)| *s == NodeStatus::Ok));
    assert!(retry_nodes(&store, "acc").unwrap().is_empty());
    let e = retry_nodes(&store, "other").unwrap_err();
    assert!(
        matches!(&e, FleetError::Usage(m) if m.starts_with("no campaign other with nodes in ")),
        "{e}"
    );
}

#[test]
fn a_stop_signal_cancels_the_running_and_the_waiting_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.sqlite")).unwrap();
    let c = campaign(dir.path(), 2);
    let mut fake = Fake::new(&[("n1", Fate::Stored), ("n2", Fate::Hangs), ("n3", Fate::Stored)]);
    let w = Watcher {
        stop_after: Some(1),
        ..Watcher::default()
    };
    let e = run(&mut fake, &mut store, &c, nodes(&["n1", "n2", "n3"]), &w).unwrap_err();
    let FleetError::Interrupted { signal, text } = e else {
        panic!("{e}")
    };
    assert_eq!(signal, 15);
    assert_eq!(
        text,
        "campaign acc cancelled (scancel --me --name=memfabric-acc); 1 nodes finished and are kept; `memfabric fleet run --retry-failed acc` runs the others"
    );
    assert_eq!(*fake.cancelled.lock().unwrap(), ["memfabric-acc"]);
    assert_eq!(*fake.killed.lock().unwrap(), ["n2"]);
    let s = statuses(&store);
    assert_eq!(s[0].1, NodeStatus::Ok);
    assert_eq!(
        (s[1].1, s[1].2.as_str()),
        (
            NodeStatus::Cancelled,
            "cancelled by signal 15 (scancel --me --name=memfabric-acc)"
        )
    );
    // The stop is seen before n1's slot is filled again: n3 never started.
    assert_eq!(
        (s[2].1, s[2].2.as_str()),
        (NodeStatus::Cancelled, "not started: cancelled by signal 15")
    );
    assert_eq!(fake.submitted, nodes(&["n1", "n2"]));
    assert_eq!(retry_nodes(&store, "acc").unwrap(), nodes(&["n2", "n3"]));
}

#[test]
fn campaign_names_and_limits_are_checked() {
    assert!(check_name("acc-2026.12_a").is_ok());
    for bad in ["", "a b", "x;rm", &"a".repeat(101)] {
        assert!(matches!(check_name(bad), Err(FleetError::Usage(_))), "{bad:?}");
    }
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("runs.sqlite")).unwrap();
    let mut fake = Fake::new(&[("n1", Fate::Stored)]);
    let zero = campaign(dir.path(), 0);
    assert!(matches!(
        run(&mut fake, &mut store, &zero, nodes(&["n1"]), &Silent),
        Err(FleetError::Usage(_))
    ));
    assert!(fake.submitted.is_empty());
}
