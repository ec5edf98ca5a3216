//! Every option does what it says, or says why not.

use super::memfabric;

#[test]
fn save_and_label_on_a_command_that_measures_nothing_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let cases: [&[&str]; 5] = [
        &["theory", "--channels", "12", "--mts", "4800", "--save"],
        &["--label", "ddr5", "audit"],
        &["topology", "--save"],
        &["list", "--label", "x"],
        &["runs", "list", "--save"],
    ];
    for args in cases {
        let out = memfabric().arg("--db").arg(&db).args(args).assert().code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("--save and --label keep a measurement in the run database; `")
                && err.contains("` is not a measurement and is never saved"),
            "{args:?}: {err}"
        );
        assert!(!db.exists(), "{args:?} made a database");
    }
}
