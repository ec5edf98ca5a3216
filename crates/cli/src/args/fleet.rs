//! Arguments of `memfabric fleet`: many hosts' runs in one store, judged together.

use std::path::PathBuf;

use clap::{Args, Subcommand};

pub const FLEET_HELP: &str = "\
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
    /// Store JSON run documents from many hosts; a document already stored is counted as a duplicate, not stored again
    #[command(
        after_help = "INPUT: a document file (one document, or several one after another), a directory (every *.json file under it), or - for standard input.\nExit status: 0 when every document was stored or already there; 1 when any was rejected (the others are stored, and each rejection is listed with its reason); 2 for bad arguments."
    )]
    Ingest(IngestArgs),
    /// Judge every host against its hardware class: medians, outliers with their likely causes, configuration drift
    #[command(
        after_help = "Outlier rule (default): more than 10% worse than the class median and more than 3 MADs from it (MAD scaled by 1.4826); classes of fewer than 3 hosts are summarised, not judged. A host whose class differs from the largest class of its platform only in population or NUMA mode, and which is rare (under a quarter of the platform's hosts, or under --min-hosts), is judged in that largest class and the difference is named as a cause.\nExit status: 0; 1 with --fail-on-outliers when any host is an outlier; 2 for bad arguments or nothing to report."
    )]
    Report(FleetReportArgs),
}

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Files, directories, or - for standard input
    #[arg(value_name = "INPUT", required = true)]
    pub inputs: Vec<String>,
    /// The campaign these runs belong to, e.g. "acceptance-2026-12" (what `fleet report --campaign` selects)
    #[arg(long, value_name = "ID")]
    pub campaign: Option<String>,
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
    /// Exit with status 1 when any host is an outlier (for acceptance scripts)
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
