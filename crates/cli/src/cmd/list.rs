//! `memfabric list`: the registry, as a table or JSON.

use anyhow::Result;
use memfabric_measure::registry::{self, Entry};
use serde::Serialize;

use crate::output::{print_all, Ctx, Status};
use crate::table::Table;

#[derive(Serialize)]
struct Listed {
    name: &'static str,
    about: &'static str,
    reports: &'static str,
}

pub fn run(ctx: &Ctx) -> Result<Status> {
    let listed: Vec<Listed> = registry::ALL
        .iter()
        .map(|&Entry { name, about, reports }| Listed { name, about, reports })
        .collect();
    if ctx.json {
        ctx.print_json("list", None, listed)?;
    } else {
        let mut t = Table::new(&["<measurement", "<what it does", "<reports"]);
        for l in &listed {
            t.row(vec![l.name.into(), l.about.into(), l.reports.into()]);
        }
        print_all(&t.render())?;
    }
    Ok(Status::Ok)
}
