//! `memfabric fleet ingest`: JSON run documents from many hosts into one store
//! (`memfabric_fleet::ingest`), and what it stored as text or JSON.

use anyhow::Result;
use memfabric_fleet::Ingested;
use memfabric_store::Store;

use super::exit_error;
use crate::args::IngestArgs;
use crate::output::{print_all, store_location, Ctx, Status};

pub fn ingest(ctx: &Ctx, a: &IngestArgs) -> Result<Status> {
    memfabric_fleet::ingest::check_campaign(a.campaign.as_deref()).map_err(exit_error)?;
    let sources = memfabric_fleet::sources(&a.inputs).map_err(exit_error)?;
    let location = store_location(ctx.store.as_deref(), None)?;
    let mut store = Store::open_location(&location)?;
    memfabric_fleet::backfill(&mut store, &ctx.progress).map_err(exit_error)?;
    let limit = a.max_document_size;
    let done = memfabric_fleet::ingest(&mut store, &sources, a.campaign.as_deref(), limit, &ctx.progress)
        .map_err(exit_error)?;
    if ctx.json {
        ctx.print_json("fleet-ingest", None, &done)?;
    } else {
        print_all(&text(&done))?;
    }
    Ok(Status::from_failures(!done.rejected.is_empty()))
}

fn text(d: &Ingested) -> String {
    let campaign = d
        .campaign
        .as_ref()
        .map_or(String::new(), |c| format!(" (campaign {c})"));
    let mut out = format!(
        "Ingested {} documents into {}{campaign}: {} new, {} duplicate, {} rejected\n",
        d.documents,
        d.store,
        d.new,
        d.duplicate,
        d.rejected.len()
    );
    if !d.rejected.is_empty() {
        out += "Rejected:\n";
        for r in &d.rejected {
            out += &format!("  {}: {}\n", r.source, r.reason);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use crate::args::{Cli, Command, FleetAction};

    /// The flag's default is the limit `fleet run` holds node documents to.
    #[test]
    fn the_default_document_limit_is_the_fleets() {
        let cli = Cli::try_parse_from(["memfabric", "fleet", "ingest", "x.json"]).unwrap();
        let Command::Fleet(f) = cli.command else {
            panic!("not fleet")
        };
        let FleetAction::Ingest(i) = f.action else {
            panic!("not ingest")
        };
        assert_eq!(i.max_document_size, memfabric_fleet::ingest::MAX_DOCUMENT_BYTES);
    }
}
