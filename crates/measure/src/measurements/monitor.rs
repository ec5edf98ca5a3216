//! `memfabric monitor` as a measurement: the plan finds and opens the first counter
//! source (its first reading is the start) and starts the command to watch; the run
//! reads the counters every interval until the duration ends, the command exits or a
//! stop signal comes, handing each interval to the observer as it is read.

use std::cell::RefCell;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use memfabric_model::{CommandRun, MonitorMeasurement, MonitorReport, Outcome};

use crate::measurement::Measurement;
use crate::monitor::{self, Access, Candidate, CounterSource, Live, Monitor as Counters};
use crate::plan::{Machine, PlanError};
use crate::sys::stop_signal;
use crate::Observer;

/// What `monitor` is asked.
#[derive(Debug, Clone)]
pub struct MonitorOptions {
    pub interval: Duration,
    /// None: until the command exits, else until a stop signal.
    pub duration: Option<Duration>,
    /// PMUs under this sysfs root, MBM under this resctrl mount.
    pub sysfs: PathBuf,
    pub resctrl: PathBuf,
    /// The command to watch over its lifetime, if any.
    pub command: Vec<String>,
    /// Send the command's stdout to stderr (stdout carries memfabric's JSON or CSV).
    pub command_stdout_to_stderr: bool,
}

/// The counter source, opened, and the command, started.
pub struct MonitorPlan {
    options: MonitorOptions,
    candidates: Vec<Candidate>,
    /// The source chosen: its name, why, the open counters and the sampler.
    chosen: RefCell<Option<(String, String, Live, Counters)>>,
    /// Why each source before the chosen one (or every one) could not be opened.
    tried: Vec<String>,
    child: RefCell<Option<Child>>,
    started: Instant,
    proc_root: PathBuf,
}

/// `memfabric monitor`.
pub struct MonitorTraffic;

impl Measurement for MonitorTraffic {
    type Options = MonitorOptions;
    type Plan = MonitorPlan;
    type Report = MonitorReport;

    fn plan(m: &Machine, o: &MonitorOptions) -> Result<MonitorPlan, PlanError> {
        let candidates = monitor::discover(&o.sysfs, &o.resctrl);
        let (chosen, tried) = monitor::open_first(&candidates);
        let chosen = chosen.map(|(c, live, counters)| {
            let why = monitor::chosen_because(c, &candidates);
            (c.name.to_string(), why, live, counters)
        });
        // The first reading was just taken: intervals and the command's time start here.
        let started = Instant::now();
        let child = match o.command.split_first() {
            Some((prog, rest)) => {
                let mut cmd = Command::new(prog);
                cmd.args(rest);
                if o.command_stdout_to_stderr {
                    cmd.stdout(std::io::stderr());
                }
                Some(
                    cmd.spawn()
                        .map_err(|e| PlanError::BadValue(format!("cannot run '{prog}': {e}")))?,
                )
            }
            None => None,
        };
        Ok(MonitorPlan {
            options: o.clone(),
            candidates,
            chosen: RefCell::new(chosen),
            tried,
            child: RefCell::new(child),
            started,
            proc_root: m.roots.proc.clone(),
        })
    }

    fn run(p: &MonitorPlan, obs: &dyn Observer) -> MonitorReport {
        let chosen = p.chosen.borrow_mut().take();
        let (source, source_reason, mut outcome) = match chosen {
            Some((name, why, mut live, counters)) => {
                let measured = sample(p, &mut live, counters, obs);
                let outcome = measured.map_or_else(|reason| Outcome::Failed { reason }, Outcome::Ok);
                (Some(name), why, outcome)
            }
            None => {
                let mut reasons = p.tried.clone();
                reasons.extend(missing(p));
                let reason = format!("no memory-traffic counters: {}", reasons.join("; "));
                let why = "no counter source is available".to_string();
                (None, why, Outcome::Skipped { reason })
            }
        };
        let command = match p.child.borrow_mut().as_mut() {
            Some(c) => match c.wait() {
                Ok(status) => Some(command_run(&p.options.command, status, p.started.elapsed())),
                Err(e) => {
                    outcome = Outcome::Failed {
                        reason: format!("waiting for the command: {e}"),
                    };
                    None
                }
            },
            None => None,
        };
        MonitorReport {
            missing: if source.is_some() { Vec::new() } else { missing(p) },
            source,
            source_reason,
            candidates: p.candidates.iter().map(Candidate::status).collect(),
            interval_s: p.options.interval.as_secs_f64(),
            command,
            outcome,
        }
    }
}

/// What is missing for each source to work, with how to enable it.
fn missing(p: &MonitorPlan) -> Vec<String> {
    let o = &p.options;
    let pmus: Vec<String> = monitor::read_pmus(&o.sysfs).into_iter().map(|p| p.name).collect();
    monitor::missing(&p.candidates, &Access::read(&p.proc_root), &o.resctrl, &pmus)
}

/// Samples every interval until the duration ends, the command exits or a stop signal.
fn sample(
    p: &MonitorPlan,
    live: &mut Live,
    mut counters: Counters,
    obs: &dyn Observer,
) -> Result<MonitorMeasurement, String> {
    let o = &p.options;
    let mut child = p.child.borrow_mut();
    let end = o.duration.map(|d| p.started + d);
    let mut last = p.started;
    loop {
        let tick = (last + o.interval).min(end.unwrap_or(last + o.interval));
        let mut exited = false;
        while Instant::now() < tick && !exited && stop_signal().is_none() {
            if let Some(c) = child.as_mut() {
                exited = c
                    .try_wait()
                    .map_err(|e| format!("waiting for the command: {e}"))?
                    .is_some();
            }
            std::thread::sleep((tick - Instant::now().min(tick)).min(Duration::from_millis(20)));
        }
        let now = Instant::now();
        let i = counters
            .sample(live, (now - last).as_secs_f64())
            .map_err(|e| format!("reading the counters: {e}"))?;
        last = now;
        obs.interval(i);
        if exited || end.is_some_and(|e| now >= e) || stop_signal().is_some() {
            break;
        }
    }
    live.close();
    Ok(counters.finish())
}

fn command_run(argv: &[String], status: ExitStatus, wall: Duration) -> CommandRun {
    use std::os::unix::process::ExitStatusExt;
    CommandRun {
        argv: argv.to_vec(),
        exit_code: status.code(),
        signal: status.signal(),
        wall_s: wall.as_secs_f64(),
    }
}
