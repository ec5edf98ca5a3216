//! memfabric: map a machine's memory fabric.

#![forbid(unsafe_code)]

mod args;
mod cmd;
mod output;
mod plot;
mod progress;
mod table;

use std::process::ExitCode;

use clap::Parser;

use args::{Cli, Command};
use output::{ClosedStdout, Ctx, Interrupted, Status, Usage};

/// `--save` and `--label` of the commands that measure; the others do not take them.
fn keep(c: &Command) -> Option<&args::Keep> {
    match c {
        Command::Run(a) => Some(&a.keep),
        Command::Latency(a) => Some(&a.keep),
        Command::Bandwidth(a) => Some(&a.keep),
        Command::Stream(a) => Some(&a.keep),
        Command::LoadedLatency(a) => Some(&a.keep),
        Command::C2c(a) => Some(&a.keep),
        Command::Sweep(a) => Some(&a.keep),
        Command::Monitor(a) => Some(&a.keep),
        Command::Gpu(a) => Some(&a.keep),
        _ => None,
    }
}

/// Where a measurement is saved, if it is: --save, --label or `run`. The store is
/// reached now, before anything is measured: a PostgreSQL server that is down or
/// refuses the login fails in one line, not after the measurement.
fn save_setup(cli: &Cli, ctx: &mut Ctx) -> Result<(), ExitCode> {
    let always_save = matches!(&cli.command, Command::Run(a) if !a.no_save);
    let kept = keep(&cli.command).cloned().unwrap_or_default();
    let asked = kept.save || kept.label.is_some();
    if let Some(Err(e)) = kept.label.as_deref().map(cmd::helpers::check_label) {
        eprintln!("memfabric: error: {e}");
        return Err(ExitCode::from(2));
    }
    if asked || always_save {
        match output::store_location(cli.store.as_deref(), cli.db.as_deref()) {
            // Reach the store before measuring: a PostgreSQL server that is down or
            // refuses the login fails now, in one line, not after the measurement.
            Ok(location) => match memfabric_store::Store::open_location(&location) {
                Ok(_) => {
                    ctx.save = Some(output::SaveTo {
                        location,
                        label: kept.label.clone(),
                    })
                }
                Err(e) => {
                    eprintln!("memfabric: error: {e}");
                    return Err(ExitCode::from(1));
                }
            },
            Err(e) => {
                eprintln!("memfabric: error: {e}");
                return Err(ExitCode::from(2));
            }
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Err(e) = memfabric_measure::sys::install_stop_handlers() {
        eprintln!("memfabric: warning: cannot catch SIGINT/SIGTERM ({e}); an interrupt will kill the run");
    }
    let mut ctx = Ctx::new(cli.json, cli.quiet);
    ctx.store = cli
        .store
        .clone()
        .or_else(|| cli.db.as_ref().map(|p| p.display().to_string()));
    if let Err(code) = save_setup(&cli, &mut ctx) {
        return code;
    }
    let result = match &cli.command {
        Command::Run(a) => cmd::run::run(&ctx, a),
        Command::Topology(a) => cmd::topology::run(&ctx, a),
        Command::Latency(a) => cmd::latency::run(&ctx, a),
        Command::Bandwidth(a) => cmd::bandwidth::run(&ctx, a),
        Command::Stream(a) => cmd::stream::run(&ctx, a),
        Command::LoadedLatency(a) => cmd::loaded::run(&ctx, a),
        Command::Runs(a) => cmd::runs::runs(&ctx, a),
        Command::Compare(a) => cmd::runs::compare_runs(&ctx, a),
        Command::Report(a) => cmd::report::run(&ctx, a),
        Command::Fleet(a) => cmd::fleet::run(&ctx, a),
        Command::C2c(a) => cmd::c2c::run(&ctx, a),
        Command::Sweep(a) => cmd::sweep::run(&ctx, a),
        Command::Theory(a) => cmd::theory::run(&ctx, a),
        Command::Plan(a) => cmd::plan::run(&ctx, a),
        Command::Audit(a) => cmd::audit::run(&ctx, a),
        Command::Monitor(a) => cmd::monitor::run(&ctx, a),
        Command::Gpu(a) => cmd::gpu::run(&ctx, a),
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
        // `memfabric ... | head`: the reader has what it wanted.
        Err(e) if e.chain().any(|c| c.is::<ClosedStdout>()) => ExitCode::from(141),
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
