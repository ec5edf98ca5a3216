//! Which suite a campaign's nodes run. One campaign holds one suite: its report
//! compares nodes figure by figure, and a node measured by `run --quick` beside nodes
//! measured by `run` would differ by method, not by hardware. A retry, or more nodes
//! added to a named campaign, therefore take the suite of the runs it already stored.

use memfabric_model::{Document, StoredDocument, Suite};
use memfabric_store::Store;

use crate::FleetError;

/// The suites `fleet run` submits: `run --quick` and `run`.
pub const CAMPAIGN_SUITES: [Suite; 2] = [Suite::Quick, Suite::Default];

/// The suite a stored `run` document records (`result.suite`); `None` for another
/// command, a suite fleet run never submits (thorough), or a document that does not
/// parse.
pub fn of_document(document: &str) -> Option<Suite> {
    match StoredDocument::parse(document).ok()?.document {
        Document::Run(r) if CAMPAIGN_SUITES.contains(&r.suite) => Some(r.suite),
        _ => None,
    }
}

/// The suite of the first run the campaign stored, if it stored one of `run`.
pub fn of_campaign(store: &Store, campaign: &str) -> Result<Option<Suite>, FleetError> {
    for node in store.nodes(campaign)? {
        if let Some(id) = node.run_id {
            if let Some(s) = of_document(&store.document(id)?) {
                return Ok(Some(s));
            }
        }
    }
    Ok(None)
}

/// The suite to submit: the one asked for, else the campaign's, else the default
/// suite. Asking for another suite than the campaign's runs is refused.
pub fn choose(asked: Option<Suite>, campaign: &str, stored: Option<Suite>) -> Result<Suite, FleetError> {
    match (asked, stored) {
        (Some(a), Some(s)) if a != s => Err(FleetError::Usage(format!(
            "campaign {campaign} was measured with --suite {}; --suite {} would mix suites in one campaign, whose report compares its nodes figure by figure: leave out --suite, or name a new --campaign",
            s.fleet_name(),
            a.fleet_name()
        ))),
        (Some(a), _) => Ok(a),
        (None, s) => Ok(s.unwrap_or(Suite::Default)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_campaign_keeps_its_suite() {
        use Suite::{Default, Quick};
        assert_eq!(choose(None, "c", Some(Quick)).unwrap(), Quick);
        assert_eq!(choose(None, "c", None).unwrap(), Default);
        assert_eq!(choose(Some(Quick), "c", None).unwrap(), Quick);
        assert_eq!(choose(Some(Default), "c", Some(Default)).unwrap(), Default);
        let e = choose(Some(Default), "acc", Some(Quick)).unwrap_err().to_string();
        assert!(
            e.starts_with("campaign acc was measured with --suite quick; --suite full would mix suites"),
            "{e}"
        );
    }
}
