//! Slurm, as `fleet run` uses it: its client commands on PATH, node lists expanded
//! by `scontrol`, node states from `sinfo`, one `srun` per node, `scancel` by job name.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::scheduler::{Job, JobExit, Scheduler, Submitted};
use crate::FleetError;

/// Slurm's client commands, found on PATH.
pub struct Slurm {
    pub srun: PathBuf,
    sinfo: PathBuf,
    scontrol: PathBuf,
    scancel: PathBuf,
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// Runs a Slurm command; its standard output, or its first error line.
fn output(program: &Path, args: &[&str]) -> Result<String, String> {
    let name = program.file_name().map_or_else(
        || program.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| format!("{name}: {e}"))?;
    if out.status.success() {
        return Ok(String::from_utf8_lossy(&out.stdout).into_owned());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let line = err
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or("no message");
    Err(format!("{name} {}: {line}", args.join(" ")))
}

impl Slurm {
    /// Slurm's commands, or the one line that says they are missing (exit 2).
    pub fn find() -> Result<Slurm, FleetError> {
        let find = |n: &str| {
            on_path(n).ok_or_else(|| {
                FleetError::Usage(format!(
                    "Slurm is not installed here (no {n} on PATH): fleet run submits one job per node through Slurm; without it, run `memfabric run --json` on each host and `memfabric fleet ingest` the documents"
                ))
            })
        };
        Ok(Slurm {
            srun: find("srun")?,
            sinfo: find("sinfo")?,
            scontrol: find("scontrol")?,
            scancel: find("scancel")?,
        })
    }
}

impl Scheduler for Slurm {
    /// A node list in Slurm's syntax (node[1-3],gpu7) as names.
    fn expand(&self, list: &str) -> Result<Vec<String>, FleetError> {
        let out = output(&self.scontrol, &["show", "hostnames", list]).map_err(FleetError::Usage)?;
        let nodes: Vec<String> = out.split_whitespace().map(str::to_string).collect();
        if nodes.is_empty() {
            return Err(FleetError::Usage(format!("the node list {list} names no node")));
        }
        Ok(nodes)
    }

    /// Every node of a partition, or of the cluster.
    fn all_nodes(&self, partition: Option<&str>) -> Result<Vec<String>, FleetError> {
        let mut args = vec!["-h", "-N", "-o", "%N"];
        if let Some(p) = partition {
            args.extend(["-p", p]);
        }
        let out = output(&self.sinfo, &args).map_err(FleetError::Usage)?;
        let mut nodes: Vec<String> = out.split_whitespace().map(str::to_string).collect();
        nodes.sort();
        nodes.dedup();
        if nodes.is_empty() {
            let place = partition.map_or("the cluster".to_string(), |p| format!("partition {p}"));
            return Err(FleetError::Usage(format!("sinfo lists no node in {place}")));
        }
        Ok(nodes)
    }

    /// The nodes Slurm cannot run a job on now (down, drained, failing), with their state.
    fn unavailable(&self, nodes: &[String]) -> Result<Vec<(String, String)>, String> {
        let list = nodes.join(",");
        let out = output(&self.sinfo, &["-h", "-N", "-o", "%N %t", "-n", &list])?;
        let mut bad: Vec<(String, String)> = out
            .lines()
            .filter_map(|l| l.split_once(' '))
            .filter(|(_, state)| {
                let s = state
                    .trim()
                    .trim_end_matches(['*', '~', '#', '!', '%', '$', '@', '^', '-']);
                matches!(
                    s,
                    "down" | "drain" | "drng" | "fail" | "failg" | "maint" | "boot" | "futr" | "unk" | "npc"
                ) || state.ends_with('*')
            })
            .map(|(n, s)| (n.to_string(), s.trim().to_string()))
            .collect();
        bad.sort();
        bad.dedup();
        Ok(bad)
    }

    /// `srun --job-name=NAME --nodes=1 --ntasks=1 --exclusive --nodelist=NODE
    /// --time=MIN [--partition=P] -- MEMFABRIC --quiet run --json --no-save [--quick]`.
    fn command(&self, node: &str, job: &Job) -> Vec<String> {
        let mut v = vec![
            self.srun.display().to_string(),
            format!("--job-name={}", job.job_name),
            "--nodes=1".into(),
            "--ntasks=1".into(),
            "--exclusive".into(),
            format!("--nodelist={node}"),
            format!("--time={}", job.minutes),
        ];
        if let Some(p) = &job.partition {
            v.push(format!("--partition={p}"));
        }
        v.push("--".into());
        v.extend(job.memfabric_args());
        v
    }

    fn submit(
        &mut self,
        node: &str,
        job: &Job,
        out: &Path,
        log: &Path,
    ) -> Result<Box<dyn Submitted>, FleetError> {
        let args = self.command(node, job);
        let stdout = std::fs::File::create(out).map_err(FleetError::io(out.display().to_string()))?;
        let stderr = std::fs::File::create(log).map_err(FleetError::io(log.display().to_string()))?;
        let child = Command::new(&args[0])
            .args(&args[1..])
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .map_err(FleetError::io(format!("starting {}", args[0])))?;
        Ok(Box::new(Srun(child)))
    }

    /// Cancels this user's jobs of a name.
    fn cancel(&self, job_name: &str) -> Result<(), String> {
        output(&self.scancel, &["--me", &format!("--name={job_name}")]).map(|_| ())
    }
}

/// A node's `srun`, which lasts as long as its job.
struct Srun(Child);

impl Submitted for Srun {
    fn try_wait(&mut self) -> Result<Option<JobExit>, FleetError> {
        let exit = self.0.try_wait().map_err(FleetError::io("waiting for srun"))?;
        Ok(exit.map(JobExit::from))
    }

    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A word as a POSIX shell would need it quoted.
pub fn quote(word: &str) -> String {
    if !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,[]@%+".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_one_exclusive_task_on_its_node() {
        let slurm = Slurm {
            srun: "/usr/bin/srun".into(),
            sinfo: "sinfo".into(),
            scontrol: "scontrol".into(),
            scancel: "scancel".into(),
        };
        let job = Job {
            job_name: "memfabric-acc".into(),
            partition: Some("compute".into()),
            minutes: 30,
            memfabric: "/opt/memfabric bin/memfabric".into(),
            suite: memfabric_model::Suite::Quick,
        };
        let line: Vec<String> = slurm.command("node7", &job).iter().map(|w| quote(w)).collect();
        assert_eq!(
            line.join(" "),
            "/usr/bin/srun --job-name=memfabric-acc --nodes=1 --ntasks=1 --exclusive --nodelist=node7 --time=30 --partition=compute -- '/opt/memfabric bin/memfabric' --quiet run --json --no-save --quick"
        );
        assert_eq!(quote("it's"), "'it'\\''s'");
    }
}
