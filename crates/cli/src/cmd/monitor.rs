//! `memfabric monitor`: live memory traffic from the memory controllers' counters,
//! for a time or over one command's lifetime.

use std::io::IsTerminal;
use std::sync::Mutex;

use anyhow::Result;
use memfabric_measure::plan::Machine;
use memfabric_measure::{MonitorOptions, MonitorTraffic, Observer};
use memfabric_model::{Failures, MonitorInterval, MonitorReport, Outcome, Traffic};
use memfabric_topo::Roots;

use crate::args::MonitorArgs;
use crate::output::{this_machine, write_stdout, ClosedStdout, Ctx, Finished, Status};
use crate::table::Table;

/// How intervals are shown while sampling.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Show {
    /// --json: nothing until the end.
    Quiet,
    Csv,
    /// One line per interval; on a terminal, rewritten in place.
    Lines {
        tty: bool,
    },
}

/// Shows each interval as it is read; the first write error ends the showing and is
/// reported when the measurement returns. A closed stdout (`monitor | head`) also
/// stops the monitoring: nobody reads what follows.
struct Intervals {
    mode: Show,
    error: Mutex<Option<anyhow::Error>>,
}

impl Observer for Intervals {
    fn interval(&self, i: &MonitorInterval) {
        let mut error = self.error.lock().unwrap_or_else(|e| e.into_inner());
        if error.is_none() {
            *error = show(self.mode, i).err();
            if error.as_ref().is_some_and(|e| e.is::<ClosedStdout>()) {
                memfabric_measure::sys::request_stop(libc::SIGPIPE);
            }
        }
    }
}

pub fn run(ctx: &Ctx, a: &MonitorArgs) -> Result<Status> {
    let mode = if ctx.json {
        Show::Quiet
    } else if a.csv {
        Show::Csv
    } else {
        Show::Lines {
            tty: std::io::stdout().is_terminal(),
        }
    };
    let options = MonitorOptions {
        interval: a.interval,
        duration: a.duration,
        sysfs: a.sysfs.clone(),
        resctrl: a.resctrl.clone(),
        command: a.command.clone(),
        command_stdout_to_stderr: ctx.json || a.csv,
    };
    if mode == Show::Csv {
        write_stdout(&format!("{}\n", CSV_HEADER))?;
    }
    // Counters count the whole system: no CPU of this process's is measured from.
    let topo = this_machine()?;
    let machine = Machine {
        topo: &topo,
        allowed_cpus: Vec::new(),
        roots: Roots::live(),
    };
    let shown = Intervals {
        mode,
        error: Mutex::new(None),
    };
    let report = memfabric_measure::measure::<MonitorTraffic>(&machine, &options, &shown)
        .map_err(super::common::usage)?;
    if let Some(e) = shown.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        return Err(e);
    }
    if let (Show::Lines { tty: true }, Outcome::Ok(_)) = (mode, &report.outcome) {
        write_stdout("\n")?;
    }
    if mode == Show::Csv {
        if let Outcome::Skipped { reason } = &report.outcome {
            eprintln!("memfabric: skipped: {reason}");
        }
    }
    let live = Roots::is_live_sys(&a.sysfs);
    let failed = !report.failures().is_empty();
    ctx.finish(Finished {
        topo: live.then_some(&topo),
        text: if ctx.json || a.csv {
            String::new()
        } else {
            render(&report)
        },
        document: report.into(),
    })?;
    Ok(Status::from_failures(failed))
}

const CSV_HEADER: &str = "interval,start_s,duration_s,channel,socket,read_bytes,write_bytes,total_bytes,read_gb_s,write_gb_s,total_gb_s";

fn show(mode: Show, i: &MonitorInterval) -> Result<()> {
    match mode {
        Show::Quiet => Ok(()),
        Show::Csv => write_stdout(&csv_rows(i)),
        Show::Lines { tty } => {
            let line = interval_line(i);
            write_stdout(&if tty {
                format!("\r\x1b[K{line}")
            } else {
                format!("{line}\n")
            })
        }
    }
}

/// Tidy CSV: one row per channel of the interval, then its sockets and the system.
pub fn csv_rows(i: &MonitorInterval) -> String {
    let opt_u = |v: Option<u64>| v.map(|v| v.to_string()).unwrap_or_default();
    let opt_f = |v: Option<f64>| v.map(|v| format!("{v:.6}")).unwrap_or_default();
    let mut out = String::new();
    for t in i.channels.iter().chain(&i.sockets).chain([&i.system]) {
        let name = if t.name.contains(',') {
            format!("\"{}\"", t.name)
        } else {
            t.name.clone()
        };
        out += &format!(
            "{},{:.3},{:.3},{},{},{},{},{},{},{},{:.6}\n",
            i.index,
            i.start_s,
            i.duration_s,
            name,
            t.socket.map(|s| s.to_string()).unwrap_or_default(),
            opt_u(t.read_bytes),
            opt_u(t.write_bytes),
            t.total_bytes,
            opt_f(t.read_gb_s),
            opt_f(t.write_gb_s),
            t.total_gb_s
        );
    }
    out
}

fn rates(t: &Traffic) -> String {
    match (t.read_gb_s, t.write_gb_s) {
        (Some(r), Some(w)) => format!(
            "read {r:.2} GB/s, write {w:.2} GB/s, total {:.2} GB/s",
            t.total_gb_s
        ),
        _ => format!("total {:.2} GB/s", t.total_gb_s),
    }
}

fn interval_line(i: &MonitorInterval) -> String {
    let mut line = format!("{:7.1} s  system: {}", i.start_s + i.duration_s, rates(&i.system));
    if i.sockets.len() > 1 {
        let per: Vec<String> = i
            .sockets
            .iter()
            .map(|s| format!("{} {:.2}", s.name, s.total_gb_s))
            .collect();
        line += &format!("  ({})", per.join(", "));
    }
    line
}

/// The final text: source, command, per-channel totals or what is missing.
pub fn render(r: &MonitorReport) -> String {
    let mut out = format!(
        "Memory traffic counters: {}\n  {}\n",
        r.source.as_deref().unwrap_or("none"),
        r.source_reason
    );
    if let Some(c) = &r.command {
        let how = match (c.exit_code, c.signal) {
            (Some(code), _) => format!("exited with status {code}"),
            (None, Some(sig)) => format!("was killed by signal {sig}"),
            _ => "ended".into(),
        };
        out += &format!("Command: {} {how} after {:.2} s\n", c.argv.join(" "), c.wall_s);
    }
    let m = match &r.outcome {
        Outcome::Ok(m) => m,
        Outcome::Skipped { .. } | Outcome::Failed { .. } => {
            let word = if matches!(r.outcome, Outcome::Failed { .. }) {
                "FAILED"
            } else {
                "skipped"
            };
            out += &format!("{word}: no memory-traffic counters\n");
            out += "What is missing, and how to enable it:\n";
            for c in r.candidates.iter().filter(|c| c.available) {
                out += &format!("  - {}: found ({}) but could not be opened\n", c.name, c.detail);
            }
            for line in &r.missing {
                out += &format!("  - {line}\n");
            }
            return out;
        }
    };
    let t = &m.total;
    out += &format!(
        "Total over {:.2} s ({} intervals): {:.3} GB, {}\n",
        t.duration_s,
        m.intervals.len(),
        t.system.total_bytes as f64 * 1e-9,
        rates(&t.system)
    );
    let mut table = Table::new(&[
        "<Channel",
        "socket",
        "read GB",
        "write GB",
        "read GB/s",
        "write GB/s",
        "total GB/s",
    ]);
    let gb = |v: Option<u64>| {
        v.map(|b| format!("{:.3}", b as f64 * 1e-9))
            .unwrap_or_else(|| "-".into())
    };
    let gbs = |v: Option<f64>| v.map(|x| format!("{x:.2}")).unwrap_or_else(|| "-".into());
    for c in t.channels.iter().chain(&t.sockets).chain([&t.system]) {
        table.row(vec![
            c.name.clone(),
            c.socket.map(|s| s.to_string()).unwrap_or_else(|| "-".into()),
            gb(c.read_bytes),
            gb(c.write_bytes),
            gbs(c.read_gb_s),
            gbs(c.write_gb_s),
            format!("{:.2}", c.total_gb_s),
        ]);
    }
    out + &table.render()
}
