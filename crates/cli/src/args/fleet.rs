//! Arguments of `memfabric fleet`: many hosts' runs in one store, judged together.

use std::path::PathBuf;

use clap::{Args, Subcommand};
use memfabric_model::Suite;

pub const FLEET_HELP: &str = "\
A fleet through Slurm, in one step:
  memfabric fleet run --all --partition compute --campaign acceptance-2026-12 --store postgres://...

A fleet in three steps:
  on every host:   memfabric run --json > $(hostname).json      (or --store URL to write directly)
  gather:          memfabric fleet ingest --campaign acceptance-2026-12 results/
  judge:           memfabric fleet report --campaign acceptance-2026-12 --fail-on-outliers

Hosts are compared within their hardware class (CPU model, sockets, cores, memory
channels populated, DIMM speed, NUMA nodes; `memfabric topology` prints a host's).
See docs/FLEET.md.";

#[derive(Debug, Args)]
pub struct FleetArgs {
    #[command(subcommand)]
    pub action: FleetAction,
}

#[derive(Debug, Subcommand)]
pub enum FleetAction {
    /// Measure every node of a cluster through Slurm: one exclusive job per node running `memfabric run`, each result stored under one campaign, then the campaign's report
    #[command(after_help = FLEET_RUN_HELP)]
    Run(FleetRunArgs),
    /// Store JSON run documents from many hosts; a document already stored is counted as a duplicate, not stored again
    #[command(
        after_help = "INPUT: a document file (one document, or several one after another), a directory (every *.json file under it), or - for standard input.\nEvery document is checked before it is stored (docs/RELIABILITY.md): each figure a finite number in its physical range (bandwidth above 0 and under 100 times its path's peak, latency above 0.1 ns), statistics ordered (min <= median <= p99 <= max), raw samples agreeing with their summary, a date at most a day ahead of this clock, a size within --max-document-size; a document that fails is rejected with the first failing figure's path and value.\nExit status: 0 when every document was stored or already there; 1 when any was rejected (the others are stored, and each rejection is listed with its reason); 2 for bad arguments."
    )]
    Ingest(IngestArgs),
    /// Judge every host against its hardware class: medians, outliers with their likely causes, configuration drift
    #[command(
        after_help = "Outlier rule (default): more than 10% worse than the class median and more than 3 MADs from it (MAD scaled by 1.4826); classes of fewer than 3 hosts are summarised, not judged. A host whose class differs from the largest class of its platform only in population or NUMA mode, and which is rare (under a quarter of the platform's hosts, or under --min-hosts), is judged in that largest class and the difference is named as a cause.\nExit status: 0; 1 with --fail-on-outliers when any host is an outlier or (with --campaign) a node of the campaign stored no run; 2 for bad arguments or nothing to report."
    )]
    Report(FleetReportArgs),
}

pub const FLEET_RUN_HELP: &str = "\
Each node runs `srun --job-name=memfabric-CAMPAIGN --nodes=1 --ntasks=1 --exclusive
--nodelist=NODE --time=MIN -- MEMFABRIC --quiet run --json --no-save [--quick]`; its
document comes back on srun's standard output, is kept in --results DIR, and is stored
under the campaign as it arrives. A node that Slurm reports down, that crashes, times
out or prints no document is recorded as failed with the reason; `--retry-failed
CAMPAIGN` runs only those again. Ctrl-C cancels the campaign's jobs (scancel) and keeps
what finished. --dry-run prints the commands and submits nothing.
Exit status: 0 when every node stored a run; 1 when any failed or was cancelled (or,
with --fail-on-outliers, any host is an outlier); 2 for bad arguments or no Slurm;
130 after Ctrl-C.";

/// `--suite quick|full`: how much of `memfabric run` each node runs.
fn suite_parser() -> impl clap::builder::TypedValueParser<Value = Suite> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    let values = memfabric_fleet::suite::CAMPAIGN_SUITES.map(|s| {
        let help = match s.run_flag() {
            Some(flag) => format!("`run {flag}`: seconds per node, a first look"),
            None => "`run`: the default suite".to_string(),
        };
        PossibleValue::new(s.fleet_name()).help(help)
    });
    PossibleValuesParser::new(values).map(|name| {
        let all = memfabric_fleet::suite::CAMPAIGN_SUITES;
        all.into_iter()
            .find(|s| s.fleet_name() == name)
            .expect("a possible value")
    })
}

#[derive(Debug, Args)]
#[command(group = clap::ArgGroup::new("which").required(true).args(["nodes", "all", "retry_failed"]))]
pub struct FleetRunArgs {
    /// The nodes, in Slurm's syntax (e.g. node[1-64],gpu3)
    #[arg(long, value_name = "LIST")]
    pub nodes: Option<String>,
    /// Every node of the partition (or of the cluster)
    #[arg(long)]
    pub all: bool,
    /// Run again the nodes of this campaign that did not store a run
    #[arg(long, value_name = "CAMPAIGN", conflicts_with = "campaign")]
    pub retry_failed: Option<String>,
    /// The Slurm partition to submit to
    #[arg(long, value_name = "P")]
    pub partition: Option<String>,
    /// How much of `memfabric run` each node runs [default: full; with --retry-failed,
    /// or --campaign naming a campaign with stored runs: that campaign's suite]
    #[arg(long, value_parser = suite_parser())]
    pub suite: Option<Suite>,
    /// The campaign's name: letters, digits, '.', '_' and '-' (default: fleet-YYYYMMDD-HHMMSS, UTC)
    #[arg(long, value_name = "ID")]
    pub campaign: Option<String>,
    /// Time limit of each node's job, in minutes (Slurm kills a job that runs longer)
    #[arg(long, value_name = "MIN", default_value_t = 30)]
    pub time: u32,
    /// Jobs submitted at once; the others wait their turn here
    #[arg(long, value_name = "N", default_value_t = 64, value_parser = crate::args::positive::<usize>, allow_negative_numbers = true)]
    pub parallel: usize,
    /// The memfabric binary on the nodes (default: this one's path, which must exist there)
    #[arg(long, value_name = "PATH")]
    pub memfabric: Option<PathBuf>,
    /// Where each node's document and Slurm's messages are kept (default: ./memfabric-fleet-CAMPAIGN)
    #[arg(long, value_name = "DIR")]
    pub results: Option<PathBuf>,
    /// Print the Slurm commands, submit nothing
    #[arg(long)]
    pub dry_run: bool,
    /// Exit with status 1 when the campaign's report finds an outlier
    #[arg(long)]
    pub fail_on_outliers: bool,
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Files, directories, or - for standard input
    #[arg(value_name = "INPUT", required = true)]
    pub inputs: Vec<String>,
    /// The campaign these runs belong to, e.g. "acceptance-2026-12" (what `fleet report --campaign` selects)
    #[arg(long, value_name = "ID")]
    pub campaign: Option<String>,
    /// The largest document read (binary multiples: 16M = 16 MiB); a larger one is rejected with its size, unread
    #[arg(long, value_name = "SIZE", default_value = "16M", value_parser = document_size)]
    pub max_document_size: usize,
}

fn document_size(s: &str) -> Result<usize, String> {
    let bytes = memfabric_model::parse_size(s).map_err(|e| e.to_string())?;
    match usize::try_from(bytes) {
        Ok(b) if b >= 1024 => Ok(b),
        _ => Err(format!("{s}: give at least 1K")),
    }
}

#[derive(Debug, Args)]
pub struct FleetReportArgs {
    /// Only this campaign's runs (default: every host's newest run with fleet facts)
    #[arg(long, value_name = "ID")]
    pub campaign: Option<String>,
    /// Only this hardware class (a key as `memfabric topology` or this report prints it)
    #[arg(long, value_name = "KEY")]
    pub class: Option<String>,
    /// One row per host and figure, as CSV on stdout, instead of the tables
    #[arg(long, conflicts_with = "json")]
    pub csv: bool,
    /// Also write the report as one HTML file: a per-host heatmap and a strip plot per class
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// Exit with status 1 when any host is an outlier, or (with --campaign) any node of the campaign stored no run: for acceptance scripts
    #[arg(long)]
    pub fail_on_outliers: bool,
    /// How much worse than the class median a figure must be to count, in percent
    #[arg(long, value_name = "PCT", default_value_t = 10.0)]
    pub worse_pct: f64,
    /// How many (scaled) MADs from the class median a figure must be to count
    #[arg(long, value_name = "N", default_value_t = 3.0)]
    pub mads: f64,
    /// Classes with fewer hosts are summarised, not judged
    #[arg(long, value_name = "N", default_value_t = 3)]
    pub min_hosts: usize,
}
