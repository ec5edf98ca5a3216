//! Arguments of `monitor`.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

pub const MONITOR_HELP: &str = "\
Reads the memory controllers' own counters through the kernel, on every vendor:
  intel-imc               uncore_imc_* cas_count_read/write (64 B per CAS)
  intel-imc-free-running  uncore_imc_free_running_* read/write
  amd-umc                 amd_umc_* (Zen 4 and later, Linux 6.7+)
  amd-df                  amd_df DRAM channel beats (earlier Zen; reads + writes)
  nvidia-scf              nvidia_scf_pmu_* (Grace) cmem reads and writes
  resctrl-mbm             resctrl mon_data/mon_L3_*/mbm_total_bytes per L3 domain
The first available in this order is used, and the result says which and why.
Where none is (a virtual machine, perf_event_paranoid, no CAP_PERFMON, resctrl
not mounted) the result is skipped with what is missing and how to enable it, and
the command exits 0.

Given `-- COMMAND ARGS...`, monitor runs it (also when no counters are available),
samples until it exits and reports the traffic over its lifetime and its exit
status; memfabric's own exit code stays 0. With --json or --csv the command's
stdout goes to stderr, so that stdout holds only memfabric's output. Without a command and without
--duration it samples until interrupted.

Output: a line per interval (updated in place on a terminal), then per-channel
totals; --csv one row per interval per channel; --json one document at the end
whose result holds every interval and the totals (give --duration or a command).
GB/s means 10^9 bytes per second.

Examples:
  memfabric monitor --duration 30s
  memfabric monitor --interval 500ms -- ./my-benchmark --size 1G
  memfabric monitor --duration 1m --csv > traffic.csv";

#[derive(Debug, Args)]
pub struct MonitorArgs {
    #[command(flatten)]
    pub keep: super::Keep,
    /// Time between readings: 1s, 500ms, 2m
    #[arg(long, value_name = "TIME", value_parser = parse_duration, default_value = "1s", allow_hyphen_values = true)]
    pub interval: Duration,
    /// Stop after this long (default: when the command exits, else when interrupted)
    #[arg(long, value_name = "TIME", value_parser = parse_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,
    /// One CSV row per interval per channel on stdout
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Read PMUs from this directory instead of /sys (a saved tree)
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub sysfs: PathBuf,
    /// The resctrl mount
    #[arg(long, value_name = "DIR", default_value = "/sys/fs/resctrl")]
    pub resctrl: PathBuf,
    /// The command to run and monitor over its lifetime
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// `1s`, `500ms`, `2m`, `1.5s`; a bare number is seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = t.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = t.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = t.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (t, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("'{s}' is not a time such as 1s, 500ms or 2m"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("'{s}': a time must be more than zero"));
    }
    Ok(Duration::from_secs_f64(v * mult))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("3"), Ok(Duration::from_secs(3)));
        assert!(parse_duration("0s").is_err() && parse_duration("fast").is_err());
    }
}

/// Whether `bandwidth` counts each measurement's DRAM traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DramArg {
    /// When a counter source is available (as `monitor` finds them)
    Auto,
    Off,
}

/// Counting DRAM traffic beside a bandwidth measurement.
#[derive(Debug, Clone, Args)]
pub struct DramArgs {
    /// Count each cell's DRAM traffic over its timed samples with the memory controllers' counters, and give its ratio to the bytes the program moved (write-allocate reads and prefetches show above 1)
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = DramArg::Auto)]
    pub dram_counters: DramArg,
    /// Look for counters under this directory instead of /sys (a saved tree)
    #[arg(long, value_name = "DIR", default_value = "/sys")]
    pub counters_sysfs: PathBuf,
    /// The resctrl mount to look for MBM counters in
    #[arg(long, value_name = "DIR", default_value = "/sys/fs/resctrl")]
    pub counters_resctrl: PathBuf,
}
