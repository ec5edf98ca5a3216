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
    let path = std::path::Path::new(location.strip_prefix("sqlite://").unwrap_or(&location));
    if !memfabric_store::is_url(&location) {
        // Reading must not create: a missing file stays missing, an empty one empty.
        match std::fs::metadata(path) {
            Err(_) => {
                return Err(Usage(format!(
                    "no run database at {location} yet: save a run first (`memfabric run`, or --save on any measurement)"
                ))
                .into())
            }
            Ok(m) if m.is_file() && m.len() == 0 => {
                return Err(Usage(format!(
                    "{location} is an empty file, not a run database: give the run database's path, or remove the file"
                ))
                .into())
            }
            Ok(_) => {}
        }
    }
    Ok(Store::open_location(&location)?)
}

/// A run given as an id, `last` or a label; one that is not there is bad input
/// (exit 2). A label that two runs share is refused with their ids, newest first:
/// a comparison must not pick one of them silently.
pub fn resolve(store: &Store, r: &RunRef) -> Result<i64> {
    let id = match r {
        RunRef::Id(id) => *id,
        RunRef::Last => store
            .last()?
            .ok_or_else(|| Usage("the run database holds no run yet".into()))?,
        RunRef::Label(label) => {
            let ids: Vec<i64> = store
                .list()?
                .into_iter()
                .filter(|s| s.label.as_deref() == Some(label.as_str()))
                .map(|s| s.id)
                .collect();
            let shown = crate::table::printable(label);
            match ids.as_slice() {
                [id] => *id,
                [] => {
                    return Err(Usage(format!(
                        "no run labelled {shown:?} in {} (see `memfabric runs list`)",
                        store.location()
                    ))
                    .into())
                }
                many => {
                    let ids: Vec<String> = many.iter().map(i64::to_string).collect();
                    return Err(Usage(format!(
                        "the label {shown:?} names {} runs ({}): give one of their ids",
                        many.len(),
                        ids.join(", ")
                    ))
                    .into());
                }
            }
        }
    };
    match store.summary(id) {
        Err(e @ memfabric_store::StoreError::NotFound(_)) => Err(Usage(e.to_string()).into()),
        other => other.map(|_| id).map_err(Into::into),
    }
}

/// A label for `--label`: not empty, and not a name a run id already has (a number
/// or `last`), so that every label can name its run.
pub fn check_label(label: &str) -> Result<(), Usage> {
    if label.trim().is_empty() {
        return Err(Usage("--label needs a name".into()));
    }
    if label == "last" || label.parse::<i64>().is_ok() {
        return Err(Usage(format!(
            "--label {label:?} would read as a run id: use a name with a letter in it"
        )));
    }
    Ok(())
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
/// A failed write leaves nothing behind: neither half a report nor the partial file.
pub fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let tmp = path.with_extension("html.partial");
    let done = std::fs::write(&tmp, text)
        .with_context(|| format!("writing {}", tmp.display()))
        .and_then(|()| {
            std::fs::rename(&tmp, path)
                .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
        });
    if done.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    done
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
