//! What several commands share that belongs to none of them: the run database
//! opened for reading, a run named on the command line, dates and dimensions as
//! text, and files written whole.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use memfabric_store::Store;

use crate::args::RunRef;
use crate::output::{store_location, Ctx, Usage};

/// The run database of the commands that read it: the one `--save` writes, else
/// `--store`/`--db`; one that does not exist yet is bad input (exit 2).
pub fn open(ctx: &Ctx) -> Result<Store> {
    let location = match &ctx.save {
        Some(to) => to.location.clone(),
        None => store_location(ctx.store.as_deref(), None)?,
    };
    if !memfabric_store::is_url(&location) && !std::path::Path::new(&location).exists() {
        return Err(Usage(format!(
            "no run database at {location} yet: save a run first (`memfabric run`, or --save on any measurement)"
        ))
        .into());
    }
    Ok(Store::open_location(&location)?)
}

/// A run given as an id or `last`; one that is not there is bad input (exit 2).
pub fn resolve(store: &Store, r: &RunRef) -> Result<i64> {
    let id = match r {
        RunRef::Id(id) => *id,
        RunRef::Last => store
            .last()?
            .ok_or_else(|| Usage("the run database holds no run yet".into()))?,
    };
    match store.summary(id) {
        Err(e @ memfabric_store::StoreError::NotFound(_)) => Err(Usage(e.to_string()).into()),
        other => other.map(|_| id).map_err(Into::into),
    }
}

/// A Unix time as "YYYY-MM-DD HH:MM UTC".
pub fn date(unix_s: u64) -> String {
    memfabric_model::units::utc(unix_s)
}

/// A figure's dimensions as "key=value key=value".
pub fn dims_text(dims: &BTreeMap<String, String>) -> String {
    let parts: Vec<String> = dims.iter().map(|(k, v)| format!("{k}={v}")).collect();
    parts.join(" ")
}

/// Writes beside the target, then renames: a reader never sees half a report.
pub fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("html.partial");
    std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path).with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_civil_utc() {
        assert_eq!(date(0), "1970-01-01 00:00 UTC");
        assert_eq!(date(951_782_400), "2000-02-29 00:00 UTC");
        assert_eq!(date(1_795_359_600), "2026-11-22 15:00 UTC"); // date -u -d @1795359600
    }
}
