//! What the fleet's tests share: the documents memfabric 0.4.0 stored on the
//! development machine (tests/fixtures/store), one of every command.

use memfabric_store::Store;

/// Run `id`'s document (1 is a `run`, 5 a `stream`; 16 runs in all), read from a
/// copy: opening a store may write to it.
pub fn fixture_documents() -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let fixture = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/store/runs-v0.4.0.sqlite"
    );
    std::fs::copy(fixture, &db).unwrap();
    let store = Store::open(&db).unwrap();
    (1..=16).map(|id| store.document(id).unwrap()).collect()
}
