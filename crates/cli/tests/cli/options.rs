//! Every option does what it says, or says why not.

use super::memfabric;

#[test]
fn save_and_label_are_offered_only_by_commands_that_measure() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.sqlite");
    let cases: [&[&str]; 5] = [
        &["theory", "--channels", "12", "--mts", "4800", "--save"],
        &["audit", "--label", "ddr5"],
        &["topology", "--save"],
        &["list", "--label", "x"],
        &["runs", "list", "--save"],
    ];
    for args in cases {
        let out = memfabric().arg("--db").arg(&db).args(args).assert().code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(
            err.starts_with("error: unexpected argument '--"),
            "{args:?}: {err}"
        );
        assert!(!db.exists(), "{args:?} made a database");
    }
    let help = |args: &[&str]| {
        let out = memfabric().args(args).arg("--help").assert().success();
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };
    for measuring in [
        &["latency"][..],
        &["bandwidth"],
        &["stream"],
        &["loaded-latency"],
        &["c2c"],
        &["sweep"],
        &["monitor"],
        &["gpu", "bandwidth"],
        &["run"],
    ] {
        let h = help(measuring);
        assert!(
            h.contains("--save") && h.contains("--label <TEXT>"),
            "{measuring:?}"
        );
    }
    for not in [
        &["theory"][..],
        &["audit"],
        &["topology"],
        &["runs"],
        &["compare"],
        &["report"],
        &["fleet", "ingest"],
        &["plan", "numa"],
        &["list"],
    ] {
        let h = help(not);
        assert!(
            !h.contains("--save") && !h.contains("--label <TEXT>"),
            "{not:?} offers --save or --label:\n{h}"
        );
    }
}

fn stream(extra: &[&str]) -> serde_json::Value {
    let args: Vec<&str> = ["stream", "--size", "8M", "--ntimes", "3"]
        .iter()
        .chain(extra)
        .copied()
        .collect();
    super::json_of(&args)
}

#[test]
fn percent_of_peak_is_given_or_its_absence_explained() {
    let _turn = super::measuring();
    // From SMBIOS where it is readable; else the reason, never a bare "-".
    let v = stream(&[]);
    let functions = v["result"]["outcome"]["functions"].as_array().unwrap().clone();
    let why = v["result"]["peak_unknown"].as_str().unwrap_or("");
    let shared = functions.iter().all(|f| f["efficiency"].is_object());
    assert!(shared == why.is_empty(), "shares {shared}, reason {why:?}");
    // Given by the user: 2 channels of DDR4-3200 are 51.2 GB/s.
    let v = stream(&["--channels", "2", "--mts", "3200"]);
    assert!(v["result"]["peak_unknown"].is_null());
    for f in v["result"]["outcome"]["functions"].as_array().unwrap() {
        let e = &f["efficiency"];
        assert_eq!(e["peak_gb_s"].as_f64(), Some(51.2), "{f}");
        let best = f["best_gb_s"].as_f64().unwrap();
        assert!((e["fraction"].as_f64().unwrap() - best / 51.2).abs() < 1e-9);
    }
    // Or by a machine file describing this machine's sockets.
    let sockets = super::json_of(&["topology"])["result"]["packages"]
        .as_array()
        .unwrap()
        .len();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("this.toml");
    let text = format!("name = \"this\"\nsockets = {sockets}\nchannels_per_socket = 4\nmts = 4800\n");
    std::fs::write(&file, text).unwrap();
    let v = stream(&["--machine", file.to_str().unwrap()]);
    let e = &v["result"]["outcome"]["functions"][0]["efficiency"];
    assert!(e["basis"].as_str().unwrap().contains("4800 MT/s"), "{e}");
}

#[test]
fn a_peak_the_user_gives_is_checked() {
    for (args, want) in [
        (&["--mts", "3200"][..], "--channels"),
        (&["--channels", "0", "--mts", "3200"][..], "channels"),
        (
            &["--machine", "/no/such.toml"][..],
            "cannot read machine file /no/such.toml",
        ),
    ] {
        let out = memfabric()
            .args(["stream", "--size", "8M"])
            .args(args)
            .assert()
            .code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn links_on_a_one_socket_machine_say_they_are_unused() {
    let _turn = super::measuring();
    let topo = super::json_of(&["topology"]);
    let sockets = topo["result"]["packages"].as_array().unwrap().len();
    let out = memfabric()
        .args(["bandwidth", "--size", "1M", "--samples", "2", "--threads", "1"])
        .args(["--links", "4", "--lanes", "16", "--gbps", "32"])
        .assert()
        .success();
    let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    let note = "--links: this machine has one socket, so no path crosses a socket link";
    assert_eq!(err.contains(note), sockets == 1, "{sockets} socket(s): {err}");
}

#[test]
fn audit_explain_prints_the_class_rule() {
    let f = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures");
    let args = [
        "audit".to_string(),
        "--sysfs".into(),
        format!("{f}/epyc7601-2s/sys"),
        "--smbios".into(),
        format!("{f}/smbios/ddr4-2s-mixed"),
        "--explain".into(),
    ];
    let out = memfabric().args(&args).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("Class by expected bandwidth loss: optimal up to 2%, reduced above that up to 15%, not recommended above 15%."),
        "{text}"
    );
    let out = memfabric().arg("--json").args(&args).assert().success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert!(v["result"]["class_rule"]
        .as_str()
        .unwrap()
        .starts_with("Class by expected bandwidth loss"));
    let plain = memfabric().arg("--json").args(&args[..5]).assert().success();
    let v: serde_json::Value = serde_json::from_slice(&plain.get_output().stdout).unwrap();
    assert!(v["result"].get("class_rule").is_none(), "only with --explain");
}

/// `memfabric ... | head`: a reader that has gone away ends the command without a
/// message, exit 141, as a process killed by SIGPIPE would end.
#[test]
fn a_closed_stdout_ends_the_command_quietly() {
    for args in [&["plan", "platforms"][..], &["topology", "--json"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("memfabric"))
            .arg("--quiet")
            .args(args)
            .stdout(writer)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(141), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: {err}");
    }
}

#[test]
fn the_binary_and_the_changelog_name_one_version() {
    let changelog =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../CHANGELOG.md")).unwrap();
    let newest = changelog
        .lines()
        .find_map(|l| l.strip_prefix("## "))
        .and_then(|l| l.split(' ').next())
        .unwrap();
    let out = super::memfabric().arg("--version").assert().success();
    let printed = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert_eq!(printed.trim(), format!("memfabric {newest}"));
    assert_eq!(newest, env!("CARGO_PKG_VERSION"));
}

#[test]
fn zero_and_negative_counts_and_times_say_what_the_value_must_be() {
    for (args, want) in [
        (
            &["latency", "--sample-ms", "0"][..],
            "invalid value '0' for '--sample-ms <MS>': must be a number above 0, not 0",
        ),
        (
            &["latency", "--samples", "-3"][..],
            "invalid value '-3' for '--samples <N>': must be a number above 0, not -3",
        ),
        (
            &["latency", "--cv-threshold", "-5"][..],
            "invalid value '-5' for '--cv-threshold <PCT>': must be a number above 0, not -5",
        ),
        (
            &["c2c", "--samples", "-1"][..],
            "must be a number above 0, not -1",
        ),
        (
            &["monitor", "--duration", "-1s"][..],
            "invalid value '-1s' for '--duration <TIME>': '-1s': a time must be more than zero",
        ),
    ] {
        let out = super::memfabric().args(args).assert().code(2);
        let e = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(!e.contains("unexpected argument"), "{args:?}: {e}");
    }
}
