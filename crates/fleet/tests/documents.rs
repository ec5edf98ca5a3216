//! The stored run a document becomes, on every kind of document memfabric 0.4.0
//! wrote (tests/fixtures/store): noise flags read from the typed result match every
//! `noise` object in the JSON, and the suite a campaign keeps is the document's.

use memfabric_fleet::ingest::new_run;
use memfabric_fleet::suite::of_document;
use memfabric_model::fleet::FleetFacts;
use memfabric_model::{StoredDocument, Suite};
use serde_json::Value;

mod common;
use common::fixture_documents;

/// Every `noise` object anywhere in the JSON, as a flag line: what the typed reading
/// must find, whatever the result's shape.
fn walked(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            if let Some(n) = map.get("noise").filter(|n| n.is_object()) {
                let pct = |k: &str| n[k].as_f64().unwrap() * 100.0;
                let cause = n["likely_causes"][0]
                    .as_str()
                    .unwrap_or("no likely cause recorded");
                out.push(format!(
                    "cv {:.1} % over the {:.1} % threshold: {cause}",
                    pct("cv"),
                    pct("threshold_cv")
                ));
            }
            map.values().for_each(|c| walked(c, out));
        }
        Value::Array(items) => items.iter().for_each(|i| walked(i, out)),
        _ => {}
    }
}

#[test]
fn typed_noise_flags_are_every_noise_object_of_every_document() {
    let mut flagged = 0;
    for text in fixture_documents() {
        let doc = StoredDocument::parse(&text).unwrap();
        let mut typed = doc.document.noise_flags();
        let mut json = Vec::new();
        walked(
            &serde_json::from_str::<Value>(&text).unwrap()["result"],
            &mut json,
        );
        typed.sort();
        json.sort();
        assert_eq!(typed, json, "{}", doc.document.command());
        flagged += typed.len();
        // The stored run carries the same flags in its facts.
        let run = new_run(&text, Some("c")).unwrap();
        let facts: FleetFacts = serde_json::from_str(run.facts.as_deref().unwrap()).unwrap();
        assert_eq!(facts.noise.len(), typed.len());
        assert_eq!(run.command, doc.document.command());
        assert_eq!(run.campaign.as_deref(), Some("c"));
    }
    assert_eq!(flagged, 48, "the fixture's noise objects");
}

#[test]
fn the_suite_is_the_one_the_run_document_records() {
    let docs = fixture_documents();
    let with_suite = |suite: &str| {
        let mut v: Value = serde_json::from_str(&docs[0]).unwrap();
        v["result"]["suite"] = suite.into();
        v.to_string()
    };
    assert_eq!(of_document(&with_suite("quick")), Some(Suite::Quick));
    assert_eq!(of_document(&with_suite("default")), Some(Suite::Default));
    assert_eq!(
        of_document(&with_suite("thorough")),
        None,
        "fleet run never submits it"
    );
    assert_eq!(of_document(&with_suite("fast")), None, "not a suite");
    assert_eq!(of_document(&docs[4]), None, "a stream document");
    assert_eq!(of_document("not json"), None);
}

#[test]
fn every_document_memfabric_wrote_passes_validation() {
    for text in fixture_documents() {
        let v: Value = serde_json::from_str(&text).unwrap();
        let now = v["started_unix_s"].as_u64().unwrap();
        if let Err(e) = memfabric_model::validate::validate(&v, now) {
            panic!("{} document: {e}", v["command"]);
        }
    }
}
