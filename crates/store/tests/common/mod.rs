//! What the SQLite and PostgreSQL suites share: runs to save, the round trip every
//! backend must pass, and child processes that write at the same time.

#![allow(dead_code)]

use std::collections::BTreeMap;

use memfabric_model::Figure;
use memfabric_store::{CampaignNode, NewRun, Saved, Store, StoreError};

pub fn figure(i: usize) -> Figure {
    let mut dims = BTreeMap::new();
    dims.insert("cpu_node".to_string(), (i % 4).to_string());
    dims.insert("mem_node".to_string(), (i / 4).to_string());
    Figure {
        measurement: "latency".into(),
        dims,
        metric: "latency_ns".into(),
        value: 80.0 + i as f64,
        min: Some(79.0),
        max: Some(90.0),
        cv: Some(0.01),
        samples: 10,
    }
}

/// Each run's document is its own (as a measured one is): a process id and a count
/// make it unique, since a document stored before is not stored again.
pub fn run(label: &str, figures: usize) -> NewRun {
    static COUNT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let document = format!(
        "{{\"label\":\"{label}\",\"process\":{},\"n\":{n},\"pad\":\"{}\"}}",
        std::process::id(),
        "x".repeat(figures * 10)
    );
    NewRun {
        started_unix_s: 1_700_000_000,
        host: Some("host-a".into()),
        host_id: None,
        class_key: None,
        label: Some(label.into()),
        command: "run".into(),
        tool_version: "0.2.0".into(),
        summary: format!("{figures} figures"),
        doc_hash: memfabric_store::document_hash(&document),
        document,
        figures: (0..figures).map(figure).collect(),
        campaign: None,
        facts: None,
    }
}

/// Save, list, read back, delete: the same answers from every backend.
pub fn round_trip(s: &mut Store) {
    assert_eq!(s.last().unwrap(), None);
    let a = s.save(&run("DDR4-2400", 16)).unwrap();
    let mut second = run("DDR4-2666", 16);
    second.host_id = Some("machine-id:0123456789abcdef".into());
    second.class_key = Some("CPU/2S/64C/16ch/2666MT/2N".into());
    let b = s.save(&second).unwrap();
    assert!(b > a);
    assert_eq!(s.last().unwrap(), Some(b));
    let list = s.list().unwrap();
    assert_eq!(
        list.iter().map(|r| r.id).collect::<Vec<_>>(),
        [b, a],
        "newest first"
    );
    assert_eq!(list[1].label.as_deref(), Some("DDR4-2400"));
    assert_eq!(list[1].figures, 16);
    assert_eq!(s.figures(a).unwrap(), (0..16).map(figure).collect::<Vec<_>>());
    assert!(s.document(b).unwrap().contains("DDR4-2666"));
    let got = s.summary(b).unwrap();
    assert_eq!(got.host.as_deref(), Some("host-a"));
    assert_eq!(
        (got.host_id, got.class_key),
        (second.host_id.clone(), second.class_key.clone())
    );
    assert_eq!(list[1].class_key, None, "a run saved without a class has none");
    s.delete(a).unwrap();
    assert!(matches!(s.figures(a), Err(StoreError::NotFound(id)) if id == a));
    assert!(matches!(s.delete(a), Err(StoreError::NotFound(_))));
    assert!(matches!(s.document(a), Err(StoreError::NotFound(_))));
}

/// Child side: saves MEMFABRIC_STORE_CHILD_RUNS runs of 50 figures into
/// MEMFABRIC_STORE_CHILD (a path or URL), or runs of 400 without end when the count
/// is "forever" (until killed).
pub fn counted_writer_child() {
    let (Ok(location), Ok(count)) = (
        std::env::var("MEMFABRIC_STORE_CHILD"),
        std::env::var("MEMFABRIC_STORE_CHILD_RUNS"),
    ) else {
        return;
    };
    let mut store = Store::open_location(&location).unwrap();
    match count.parse::<usize>() {
        Ok(n) => {
            for i in 0..n {
                store
                    .save(&run(&format!("p{}-{i}", std::process::id()), 50))
                    .unwrap();
            }
        }
        Err(_) => {
            for i in 0.. {
                store.save(&run(&format!("child-{i}"), 400)).unwrap();
            }
        }
    }
}

fn child(location: &str, runs: &str, exact: &str) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", exact, "--nocapture", "--test-threads", "1"])
        .env("MEMFABRIC_STORE_CHILD", location)
        .env("MEMFABRIC_STORE_CHILD_RUNS", runs)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// `writers` processes save `each` runs into `location` at once; every run lands whole.
pub fn writers_at_once(location: &str, writers: usize, each: usize) {
    let children: Vec<_> = (0..writers)
        .map(|_| child(location, &each.to_string(), "counted_writer_child"))
        .collect();
    for mut c in children {
        assert!(c.wait().unwrap().success(), "a writer failed");
    }
    let store = Store::open_location(location).unwrap();
    let list = store.list().unwrap();
    assert_eq!(
        list.len(),
        writers * each,
        "runs saved by {writers} writers x {each}"
    );
    assert!(list.iter().all(|r| r.figures == 50), "a partial run");
}

/// Kills writers saving into `location` with SIGKILL, each once it has saved a run
/// and then at a varied moment of a later save; returns the store, for the caller to
/// check that only whole runs remain.
pub fn kill_writers(location: &str, rounds: usize) -> Store {
    let watch = Store::open_location(location).unwrap();
    for round in 0..rounds {
        let before = watch.list().unwrap().len();
        let mut c = child(location, "forever", "counted_writer_child");
        let started = std::time::Instant::now();
        while watch.list().unwrap().len() == before {
            assert!(
                started.elapsed().as_secs() < 60,
                "the writer saved nothing in a minute"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::thread::sleep(std::time::Duration::from_millis(3 + 7 * round as u64 % 40));
        c.kill().unwrap();
        c.wait().unwrap();
    }
    let store = Store::open_location(location).unwrap();
    let list = store.list().unwrap();
    assert!(
        list.len() >= rounds,
        "the writers saved something: {}",
        list.len()
    );
    for r in &list {
        assert_eq!(r.figures, 400, "run {} ({:?}) is partial", r.id, r.label);
        assert!(store.document(r.id).unwrap().ends_with("\"}"));
    }
    store
}

/// A batch lands whole; a document stored before is a duplicate with the first id,
/// however it is formatted; the fleet reads the runs with facts, by campaign.
pub fn batches_and_fleet_rows(s: &mut Store) {
    let mut a = run("a", 3);
    a.campaign = Some("acceptance".into());
    a.facts = Some("{\"headlines\":{\"c2c_ns\":70.0}}".into());
    let mut b = run("b", 2);
    b.campaign = Some("study".into());
    b.facts = Some("{}".into());
    let plain = run("c", 1);
    let saved = s.save_all(&[a.clone(), b.clone(), plain]).unwrap();
    assert!(saved.iter().all(|x| matches!(x, Saved::New(_))), "{saved:?}");
    // The same document again, reformatted, in a batch with a new one.
    let mut again = a.clone();
    let v: serde_json::Value = serde_json::from_str(&a.document).unwrap();
    again.document = serde_json::to_string_pretty(&v).unwrap();
    again.doc_hash = memfabric_store::document_hash(&again.document);
    assert_eq!(again.doc_hash, a.doc_hash, "formatting is not part of the hash");
    let d = run("d", 1);
    let second = s.save_all(&[again, d]).unwrap();
    assert_eq!(second[0], Saved::Duplicate(saved[0].id()));
    assert!(matches!(second[1], Saved::New(_)));
    assert_eq!(s.list().unwrap().len(), 4);
    assert_eq!(
        s.save(&b).unwrap(),
        saved[1].id(),
        "save of a stored document keeps its id"
    );
    let fleet = s.fleet(None).unwrap();
    assert_eq!(
        fleet.iter().map(|r| r.id).collect::<Vec<_>>(),
        [saved[1].id(), saved[0].id()],
        "runs with facts, newest first"
    );
    let one = s.fleet(Some("acceptance")).unwrap();
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].facts, a.facts.unwrap());
    assert_eq!(one[0].campaign.as_deref(), Some("acceptance"));
    assert!(s.fleet(Some("none")).unwrap().is_empty());

    // Runs without facts (as stored before schema 3) get them once.
    let old = s.without_facts().unwrap();
    assert_eq!(
        old.iter().map(|(id, _)| *id).collect::<Vec<_>>(),
        [saved[2].id(), second[1].id()]
    );
    let (id, doc) = &old[0];
    s.set_facts(*id, "{\"headlines\":{}}", &memfabric_store::document_hash(doc))
        .unwrap();
    s.set_facts(old[1].0, "{}", "a hash another run may hold")
        .unwrap();
    assert!(s.without_facts().unwrap().is_empty());
    assert_eq!(s.fleet(None).unwrap().len(), 4);

    // A campaign's nodes: recorded, then updated in place.
    let node = |name: &str, status: &str, run_id: Option<i64>| CampaignNode {
        campaign: "acceptance".into(),
        node: name.into(),
        status: memfabric_store::NodeStatus::from_name(status).unwrap(),
        reason: (status == "failed").then(|| "srun: error: Node failure on node2".into()),
        run_id,
        updated_unix_s: 1_800_000_000,
    };
    s.set_node(&node("node2", "failed", None)).unwrap();
    s.set_node(&node("node1", "ok", Some(saved[0].id()))).unwrap();
    assert_eq!(
        s.nodes("acceptance").unwrap(),
        [
            node("node1", "ok", Some(saved[0].id())),
            node("node2", "failed", None)
        ]
    );
    s.set_node(&node("node2", "ok", Some(saved[1].id()))).unwrap();
    assert_eq!(
        s.nodes("acceptance").unwrap()[1],
        node("node2", "ok", Some(saved[1].id()))
    );
    assert!(s.nodes("other").unwrap().is_empty());
}
