//! Which run stands for a host in a fleet report, and the facts every stored run
//! carries for it.

use std::collections::BTreeMap;

use memfabric_model::fleet::{
    judge, Conflict, FleetFacts, FleetHost, FleetReport, Missing, NodeStatus, Rule,
};
use memfabric_store::{CampaignNode, FleetRow, Store};

use crate::{FleetError, Observer};

/// One host per scheduler node name (else host id, else hostname): its newest run's
/// facts (of the runs with a headline figure), with headline figures its older runs
/// of the same campaign and hardware class measured and the newest did not. The
/// scheduler's name comes first because it is the cluster's own name for the node,
/// and because machines cloned from one image can share a machine-id.
///
/// Newest means measured last, among runs whose date is plausible: a run dated more
/// than a day ahead of this clock (stored before documents were validated) would
/// otherwise stand for its host forever. `rows` come newest measured first.
pub fn hosts(rows: Vec<FleetRow>) -> Result<Vec<FleetHost>, FleetError> {
    let latest = memfabric_store::now_unix_s().saturating_add(memfabric_model::validate::MAX_FUTURE_S);
    let mut order: Vec<String> = Vec::new();
    let mut by_key: BTreeMap<String, (FleetHost, Option<String>, Option<String>)> = BTreeMap::new();
    for row in rows.into_iter().filter(|r| r.started_unix_s <= latest) {
        let facts: FleetFacts = serde_json::from_str(&row.facts)
            .map_err(|e| FleetError::Damaged(format!("reading the fleet facts of run {}: {e}", row.id)))?;
        // A run with no headline figure (gpu-info, monitor, a failed run) says
        // nothing to compare: the host's next older run counts.
        if facts.headlines.is_empty() {
            continue;
        }
        let run = || format!("run {}", row.id);
        let node = facts.node.clone();
        let key = (node.as_ref().map(|n| format!("node {n}")))
            .or_else(|| row.host_id.clone())
            .or_else(|| row.host.clone())
            .unwrap_or_else(run);
        match by_key.get_mut(&key) {
            None => {
                let name = node
                    .or_else(|| row.host.clone())
                    .or_else(|| row.host_id.clone())
                    .unwrap_or_else(run);
                let host = FleetHost {
                    run_id: row.id,
                    measured_unix_s: row.started_unix_s,
                    stored_unix_s: row.saved_unix_s,
                    name,
                    host_id: row.host_id.clone(),
                    facts,
                };
                order.push(key.clone());
                by_key.insert(key, (host, row.campaign, row.class_key));
            }
            Some((host, campaign, class)) if *campaign == row.campaign && *class == row.class_key => {
                for (k, v) in facts.headlines {
                    host.facts.headlines.entry(k).or_insert(v);
                }
            }
            Some(_) => {}
        }
    }
    Ok(order
        .into_iter()
        .map(|k| by_key.remove(&k).expect("kept").0)
        .collect())
}

/// Gives runs stored before fleet facts existed (schema 3) their facts and document
/// hash, once: from then on they count in fleet reports, and ingesting their document
/// again is a duplicate. A document that is not a run's gets empty facts, so it is
/// not read again.
pub fn backfill(store: &mut Store, obs: &dyn Observer) -> Result<(), FleetError> {
    let old = store.without_facts()?;
    if old.is_empty() {
        return Ok(());
    }
    obs.note(&format!(
        "reading {} runs stored before fleet facts existed (once)",
        old.len()
    ));
    for (id, document) in old {
        let (facts, hash) = match crate::ingest::new_run(&document, None) {
            Ok(run) => (run.facts.unwrap_or_else(|| "{}".into()), run.doc_hash),
            Err(_) => ("{}".into(), memfabric_store::document_hash(&document)),
        };
        store.set_facts(id, &facts, &hash)?;
    }
    Ok(())
}

/// Host ids that arrived with more than one hardware class in one campaign, each
/// class with its runs (`rows` newest first, as the store gives them).
pub fn conflicts(rows: &[FleetRow]) -> Vec<Conflict> {
    type Classes = Vec<(String, Vec<i64>)>;
    let mut by_host: BTreeMap<(Option<&str>, &str), Classes> = BTreeMap::new();
    for r in rows {
        let Some(id) = r.host_id.as_deref() else { continue };
        let class = r.class_key.clone().unwrap_or_else(|| "unknown class".into());
        let classes = by_host.entry((r.campaign.as_deref(), id)).or_default();
        match classes.iter_mut().find(|(c, _)| *c == class) {
            Some((_, runs)) => runs.push(r.id),
            None => classes.push((class, vec![r.id])),
        }
    }
    by_host
        .into_iter()
        .filter(|(_, classes)| classes.len() > 1)
        .map(|((campaign, id), classes)| Conflict {
            host_id: id.to_string(),
            campaign: campaign.map(str::to_string),
            classes,
        })
        .collect()
}

/// A campaign's nodes without a run, for its report.
pub fn missing(nodes: &[CampaignNode]) -> Vec<Missing> {
    nodes
        .iter()
        .filter(|n| n.status != NodeStatus::Ok)
        .map(|n| Missing {
            node: n.node.clone(),
            status: n.status,
            reason: n.reason.clone(),
        })
        .collect()
}

/// A campaign's report by the default rule, as `fleet run` ends with it (the node
/// table printed beside it names the nodes without a run); None when no run of the
/// campaign has a headline figure.
pub fn campaign_report(store: &Store, campaign: &str) -> Result<Option<FleetReport>, FleetError> {
    report(store, Some(campaign), Rule::default())
}

/// Every host of the store (or of a campaign) judged by `rule`, with the identity
/// conflicts found on the way; None when no run has a headline figure.
pub fn report(store: &Store, campaign: Option<&str>, rule: Rule) -> Result<Option<FleetReport>, FleetError> {
    let rows = store.fleet(campaign)?;
    let conflicts = conflicts(&rows);
    let hosts = hosts(rows)?;
    if hosts.is_empty() {
        return Ok(None);
    }
    let mut r = judge(&hosts, rule);
    r.conflicts = conflicts;
    Ok(Some(r))
}
