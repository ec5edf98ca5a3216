//! memfabric: map a machine's memory fabric.

mod args;
mod cmd;
mod output;
mod progress;
mod table;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use output::{Ctx, Interrupted, Status, Usage};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = memfabric_measure::sys::install_stop_handlers() {
        eprintln!("memfabric: warning: cannot catch SIGINT/SIGTERM ({e}); an interrupt will kill the run");
    }
    let ctx = Ctx::new(cli.json, cli.quiet);
    let result = match &cli.command {
        Command::Run(a) => cmd::run::run(&ctx, a),
        Command::Topology(a) => cmd::topology::run(&ctx, a),
        Command::Latency(a) => cmd::latency::run(&ctx, a),
        Command::Bandwidth(a) => cmd::bandwidth::run(&ctx, a),
        Command::Stream(a) => cmd::stream::run(&ctx, a),
        Command::LoadedLatency(a) => cmd::loaded::run(&ctx, a),
        Command::List => cmd::list::run(&ctx),
    };
    match result {
        Ok(Status::Ok) => ExitCode::SUCCESS,
        Ok(Status::MeasurementFailed) => ExitCode::from(1),
        Err(e) if e.is::<Interrupted>() => {
            eprintln!("memfabric: {e}");
            let sig = e.downcast_ref::<Interrupted>().map_or(2, |i| i.0);
            ExitCode::from(128 + sig as u8)
        }
        Err(e) if e.is::<Usage>() => {
            eprintln!("memfabric: error: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("memfabric: error: {e:#}");
            ExitCode::from(1)
        }
    }
}
