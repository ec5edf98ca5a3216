//! Arguments of the commands that read the run history: `runs`, `compare`, `report`.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub action: RunsAction,
}

#[derive(Debug, Subcommand)]
pub enum RunsAction {
    /// Every saved run, newest first: id, date, host, label, one-line summary
    List {
        /// Only runs of this hardware class (`memfabric topology` prints this machine's)
        #[arg(long, value_name = "KEY")]
        class: Option<String>,
        /// Only runs of this host (the hashed id `memfabric topology` prints)
        #[arg(long, value_name = "ID")]
        host_id: Option<String>,
    },
    /// One run's figures (RUN: an id, `last`, or a label)
    Show { run: RunRef },
    /// Delete a run and its figures
    Delete { run: RunRef },
    /// A run as its JSON document or as tidy CSV (one figure per row)
    Export {
        run: RunRef,
        #[arg(long, value_enum, default_value_t = ExportFormat::Json)]
        format: ExportFormat,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ExportFormat {
    Json,
    Csv,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The runs (ids, `last`, or labels; a label two runs share is refused with their ids). Two runs: differences B - A and difference matrices.
    /// More: one column per run and each run's ratio to the first (a configuration study)
    #[arg(value_name = "RUN")]
    pub runs: Vec<RunRef>,
    /// Every run whose label starts with this, oldest first, instead of listing them
    #[arg(long, value_name = "PREFIX", conflicts_with = "runs")]
    pub label_prefix: Option<String>,
    /// Also write the study as one HTML file with grouped bars
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// The run (an id, `last`, or its label; default: last)
    pub run: Option<RunRef>,
    /// A second run: the report compares the two
    #[arg(long, value_name = "RUN")]
    pub compare: Option<RunRef>,
    /// The HTML file to write (default: memfabric-run-ID.html here)
    #[arg(short, long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Overwrite the file if it exists (without it, an existing file is refused)
    #[arg(long)]
    pub force: bool,
}

/// A saved run: its id, `last` for the newest, or its label (`--label NAME`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunRef {
    Id(i64),
    Last,
    Label(String),
}

impl std::str::FromStr for RunRef {
    type Err = String;

    fn from_str(s: &str) -> Result<RunRef, String> {
        if s == "last" {
            return Ok(RunRef::Last);
        }
        if let Ok(id) = s.parse::<i64>() {
            return if id > 0 {
                Ok(RunRef::Id(id))
            } else {
                Err(format!(
                    "'{s}' is not a run id (a positive number, `last`, or a run's label)"
                ))
            };
        }
        if s.trim().is_empty() {
            return Err("a run is named by its id, `last`, or its label; this is empty".into());
        }
        Ok(RunRef::Label(s.to_string()))
    }
}

/// `--save` and `--label`: offered by the commands that measure, and only by them.
#[derive(Debug, Clone, Default, Args)]
pub struct Keep {
    /// Keep the result in the run database (see `memfabric runs`); `run` always keeps its result
    #[arg(long, global = true)]
    pub save: bool,
    /// A name for the saved run, e.g. "DDR4-2666" (implies --save); names the run wherever a run id is taken
    #[arg(long, global = true, value_name = "TEXT")]
    pub label: Option<String>,
}
