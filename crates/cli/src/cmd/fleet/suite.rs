//! Which suite a campaign's nodes run. One campaign holds one suite: its report
//! compares nodes figure by figure, and a node measured by `run --quick` beside nodes
//! measured by `run` would differ by method, not by hardware. A retry, or more nodes
//! added to a named campaign, therefore take the suite of the runs it already stored.

use anyhow::Result;
use memfabric_store::Store;

use crate::args::SuiteArg;
use crate::output::Usage;

/// The suite a stored `run` document records (`result.suite`): `quick`, or the
/// default one; `None` for another command, a `thorough` run, which fleet run
/// never submits, or a document that does not parse.
pub fn of_document(document: &str) -> Option<SuiteArg> {
    let v: serde_json::Value = serde_json::from_str(document).ok()?;
    if v["command"] != "run" {
        return None;
    }
    match v["result"]["suite"].as_str()? {
        "quick" => Some(SuiteArg::Quick),
        "default" => Some(SuiteArg::Full),
        _ => None,
    }
}

/// The suite of the first run the campaign stored, if it stored one of `run`.
pub fn of_campaign(store: &Store, campaign: &str) -> Result<Option<SuiteArg>> {
    for node in store.nodes(campaign)? {
        if let Some(id) = node.run_id {
            if let Some(s) = of_document(&store.document(id)?) {
                return Ok(Some(s));
            }
        }
    }
    Ok(None)
}

pub fn name(s: SuiteArg) -> &'static str {
    match s {
        SuiteArg::Quick => "quick",
        SuiteArg::Full => "full",
    }
}

/// The suite to submit: the one asked for, else the campaign's, else `full`. Asking
/// for another suite than the campaign's runs is refused.
pub fn choose(asked: Option<SuiteArg>, campaign: &str, stored: Option<SuiteArg>) -> Result<SuiteArg, Usage> {
    match (asked, stored) {
        (Some(a), Some(s)) if a != s => Err(Usage(format!(
            "campaign {campaign} was measured with --suite {}; --suite {} would mix suites in one campaign, whose report compares its nodes figure by figure: leave out --suite, or name a new --campaign",
            name(s),
            name(a)
        ))),
        (Some(a), _) => Ok(a),
        (None, s) => Ok(s.unwrap_or(SuiteArg::Full)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(command: &str, suite: &str) -> String {
        serde_json::json!({"command": command, "args": [], "result": {"suite": suite}}).to_string()
    }

    #[test]
    fn the_suite_is_the_one_the_run_document_records() {
        assert_eq!(of_document(&doc("run", "quick")), Some(SuiteArg::Quick));
        assert_eq!(of_document(&doc("run", "default")), Some(SuiteArg::Full));
        assert_eq!(of_document(&doc("run", "thorough")), None);
        assert_eq!(of_document(&doc("stream", "quick")), None);
        assert_eq!(of_document("not json"), None);
    }

    #[test]
    fn a_campaign_keeps_its_suite() {
        use SuiteArg::{Full, Quick};
        assert_eq!(choose(None, "c", Some(Quick)).unwrap(), Quick);
        assert_eq!(choose(None, "c", None).unwrap(), Full);
        assert_eq!(choose(Some(Quick), "c", None).unwrap(), Quick);
        assert_eq!(choose(Some(Full), "c", Some(Full)).unwrap(), Full);
        let e = choose(Some(Full), "acc", Some(Quick)).unwrap_err().0;
        assert!(
            e.starts_with("campaign acc was measured with --suite quick; --suite full would mix suites"),
            "{e}"
        );
    }
}
