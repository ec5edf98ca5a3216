//! `plan`: every command on every platform file, JSON, HTML, a platform file
//! of one's own, calibration from a stored run, and bad input refused in one line.

use std::path::PathBuf;

use serde_json::Value;

use super::synth::{self, Templates};
use super::{json_of, memfabric, refused};

const PLATFORMS: [&str; 7] = [
    "apu-lpddr5x-256",
    "epyc-7002-2s",
    "epyc-9004-2s",
    "grace-superchip",
    "xeon-7500-4s",
    "xeon-sp-2s",
    "xeon-spr-2s",
];

fn repo() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

fn fixtures() -> PathBuf {
    repo().join("tests/fixtures")
}

#[test]
fn every_command_works_on_every_platform() {
    let listed = json_of(&["plan", "platforms"]);
    let ids: Vec<&str> = listed["result"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, PLATFORMS);
    for p in PLATFORMS {
        let pop = json_of(&["plan", "population", "--platform", p, "--capacity", "100G"]);
        let first = &pop["result"]["candidates"][0];
        assert!(first["usable_gib"].as_f64().unwrap() >= 100.0, "{p}: {first}");
        assert!(
            pop["result"]["sources"].as_array().is_some_and(|s| !s.is_empty()),
            "{p}"
        );
        let modes = &listed["result"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == p)
            .unwrap()["platform"]["numa"]["nodes_per_socket"];
        for nps in modes.as_array().unwrap() {
            let nps = nps.to_string();
            let numa = json_of(&["plan", "numa", "--platform", p, "--nps", &nps]);
            let figures = numa["result"]["figures"].as_array().unwrap();
            assert!(
                !figures.is_empty() && figures.iter().all(|f| f["value"].as_f64().unwrap() > 0.0),
                "{p} {nps}: {figures:?}"
            );
        }
        // No machine of these platforms here: a saved one, named.
        let sys = fixtures().join("this-machine/sys");
        let out = memfabric()
            .args(["plan", "check", "--platform", p, "--sysfs"])
            .arg(&sys)
            .args(["--json"])
            .output()
            .unwrap();
        assert!(
            matches!(out.status.code(), Some(0 | 1)),
            "{p}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
        assert_eq!(v["command"], "plan-check");
    }
}

#[test]
fn the_text_answer_comes_first() {
    let out = memfabric()
        .args([
            "plan",
            "population",
            "--platform",
            "epyc-9004-2s",
            "--capacity",
            "1TiB",
        ])
        .assert()
        .success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let line = text.lines().find(|l| l.starts_with("Recommended:")).unwrap();
    assert!(
        line.contains("12 x 48 GiB DDR5 per socket") && line.contains("balanced"),
        "{line}"
    );
    assert!(text.lines().position(|l| l.starts_with("Recommended:")).unwrap() < 5);
}

#[test]
fn html_chart_of_the_candidates() {
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("plan.html");
    memfabric()
        .args([
            "plan",
            "population",
            "--platform",
            "xeon-spr-2s",
            "--capacity",
            "512G",
            "--html",
        ])
        .arg(&page)
        .assert()
        .success();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg") && html.contains("(recommended)"));
}

#[test]
fn a_platform_file_of_ones_own() {
    let dir = tempfile::tempdir().unwrap();
    let genoa = std::fs::read_to_string(repo().join("platforms/epyc-9004-2s.toml")).unwrap();
    let mine = genoa
        .replace("name = \"2S AMD EPYC 9004 (Genoa)\"", "name = \"my board\"")
        .replace("mts = [4800, 3600]", "mts = [4800, 4400]");
    std::fs::write(dir.path().join("myboard.toml"), &mine).unwrap();
    let by_name = memfabric()
        .env("MEMFABRIC_PLATFORMS", dir.path())
        .args([
            "--json",
            "plan",
            "population",
            "--platform",
            "myboard",
            "--capacity",
            "2TiB",
            "--dimm-sizes",
            "48",
        ])
        .output()
        .unwrap();
    assert!(
        by_name.status.success(),
        "{}",
        String::from_utf8_lossy(&by_name.stderr)
    );
    let v: Value = serde_json::from_slice(&by_name.stdout).unwrap();
    assert_eq!(v["result"]["platform"], "my board");
    assert_eq!(
        v["result"]["candidates"][0]["mt_s"], 4400,
        "24 x 48 GiB at the board's 2 DPC speed"
    );
    let path = dir.path().join("myboard.toml");
    let by_path = json_of(&["plan", "numa", "--platform", path.to_str().unwrap(), "--nps", "2"]);
    assert_eq!(by_path["result"]["platform_origin"], path.to_str().unwrap());

    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        mine.replace("bus_bits = 64", "bus_bits = 64\nbus_width = 2"),
    )
    .unwrap();
    let err = refused(&["plan", "numa", "--platform", bad.to_str().unwrap(), "--nps", "1"]);
    assert!(
        err.contains("bad.toml: line 16:") && err.contains("unknown field `bus_width`"),
        "{err}"
    );
    std::fs::write(&bad, mine.replace("groups = 4", "groups = 5")).unwrap();
    let err = refused(&["plan", "numa", "--platform", bad.to_str().unwrap(), "--nps", "1"]);
    assert!(
        err.contains("bad.toml: line 16: memory: groups = 5 does not divide"),
        "{err}"
    );
}

/// Bad input, each as a command line and what its one error line says.
const REFUSED: [(&str, &str); 10] = [
    (
        "plan population --platform nosuch --capacity 1T",
        "unknown platform nosuch: known are",
    ),
    (
        "plan population --platform epyc-9004-2s --capacity 100T",
        "at most 12288 GiB usable",
    ),
    (
        "plan population --platform epyc-9004-2s --capacity 1T --ras mirroring",
        "no RAS mode mirroring",
    ),
    (
        "plan population --platform apu-lpddr5x-256 --capacity 64G --dimm-sizes 32",
        "soldered",
    ),
    ("plan numa --platform epyc-9004-2s --nps 3", "not NPS3"),
    (
        "plan numa --platform epyc-9004-2s --nps 1 --links 2",
        "3 or 4 xGMI",
    ),
    (
        "plan numa --platform epyc-9004-2s --nps 1 --link-width x2",
        "not x2",
    ),
    (
        "plan numa --platform epyc-9004-2s --nps 1 --link-gbps 40",
        "at most 32",
    ),
    (
        "plan numa --platform grace-superchip --nps 1 --link-gbps 10",
        "fixed rate",
    ),
    ("plan check --sysfs /nonexistent", "/nonexistent"),
];

#[test]
fn bad_input_is_refused_in_one_line() {
    for (line, says) in REFUSED {
        let args: Vec<&str> = line.split(' ').collect();
        let err = refused(&args);
        assert!(err.contains(says), "{line}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{line}: {err}");
    }
    // Values clap itself refuses: its error line, then its hint.
    let err = refused(&[
        "plan",
        "population",
        "--platform",
        "epyc-9004-2s",
        "--capacity",
        "0",
    ]);
    assert!(err.contains("the capacity must be above 0"), "{err}");
    let err = refused(&[
        "plan",
        "numa",
        "--platform",
        "epyc-9004-2s",
        "--nps",
        "1",
        "--link-width",
        "wide",
    ]);
    assert!(err.contains("not a link width like x16"), "{err}");
}

#[test]
fn check_finds_the_deviations_of_a_saved_machine() {
    let out = memfabric()
        .args(["plan", "check", "--platform", "epyc-7002-2s", "--sysfs"])
        .arg(fixtures().join("epyc7601-2s/sys"))
        .arg("--smbios")
        .arg(fixtures().join("smbios/ddr4-2s-mixed"))
        .assert()
        .code(1);
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        text.contains("6 deviation(s)") && text.contains("fix: add 2 DIMM(s) of 32 GiB for 8 per socket"),
        "{text}"
    );
    // Without DIMM tables, the population is not checked, and it says so.
    let v = json_of(&[
        "plan",
        "check",
        "--platform",
        "epyc-7002-2s",
        "--sysfs",
        fixtures().join("epyc7601-2s/sys").to_str().unwrap(),
    ]);
    assert!(
        v["result"]["not_checked"][0]
            .as_str()
            .unwrap()
            .starts_with("DIMM population and speeds"),
        "{v}"
    );
}

/// A store in `dir` holding one synthetic host of `class`, as run 1.
fn stored_run(dir: &std::path::Path, class: &synth::Class) -> std::path::PathBuf {
    let store = dir.join("runs.sqlite");
    let t = Templates::load(&repo());
    let doc = synth::document(&t, class, 0, 1, None);
    let file = dir.join("genoa.json");
    std::fs::write(&file, serde_json::to_string(&doc).unwrap()).unwrap();
    memfabric()
        .arg("--store")
        .arg(&store)
        .args(["fleet", "ingest"])
        .arg(&file)
        .assert()
        .success();
    store
}

#[test]
fn calibration_takes_the_efficiencies_of_a_stored_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = stored_run(dir.path(), &synth::CLASSES[0]);
    let out = memfabric()
        .arg("--store")
        .arg(&store)
        .args([
            "--json",
            "plan",
            "numa",
            "--platform",
            "epyc-9004-2s",
            "--nps",
            "1",
            "--calibrate",
            "last",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let r = &v["result"];
    // The synthetic Genoa host measures about 370 GB/s per node of 460.8.
    let triad = r["efficiencies"]["triad"].as_f64().unwrap();
    assert!((triad - 370.0 / 460.8).abs() < 0.03, "{triad}");
    assert_eq!(r["efficiency_source"], "run 1");
    assert!(r["notes"].to_string().contains("did not limit"), "{}", r["notes"]);
    let err = refused(&[
        "--store",
        store.to_str().unwrap(),
        "plan",
        "numa",
        "--platform",
        "xeon-7500-4s",
        "--nps",
        "1",
        "--calibrate",
        "1",
    ]);
    assert!(
        err.contains("cannot calibrate from run 1: it ran on 2 socket(s)"),
        "{err}"
    );
}

/// A Genoa run whose interleaved Triad the links held to 480 GB/s: the
/// calibration takes the links' share with lines both ways from it, and the
/// text says where each efficiency came from (docs/REPRODUCE.md shows it).
#[test]
fn calibration_from_a_link_bound_run_takes_the_link_share() {
    let dir = tempfile::tempdir().unwrap();
    let g = &synth::CLASSES[0];
    let linked = synth::Class {
        interleaved: 480.0,
        name: g.name,
        cpu_model: g.cpu_model,
        sockets: g.sockets,
        cores: g.cores,
        nodes: g.nodes,
        channels: g.channels,
        mt_s: g.mt_s,
        bios: g.bios,
        triad_per_node: g.triad_per_node,
        local_ns: g.local_ns,
        remote_ns: g.remote_ns,
        c2c_ns: g.c2c_ns,
        all_remote: g.all_remote,
    };
    let store = stored_run(dir.path(), &linked);
    let args = [
        "plan",
        "numa",
        "--platform",
        "epyc-9004-2s",
        "--nps",
        "1",
        "--links",
        "3",
        "--calibrate",
        "last",
    ];
    let out = memfabric()
        .arg("--store")
        .arg(&store)
        .args(args)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    println!("{text}");
    assert!(text.contains("Efficiencies (run 1)"), "{text}");
    assert!(text.contains("link share with lines both ways 0.6"), "{text}");
    let v = json_of(&[&["--store", store.to_str().unwrap(), "--json"][..], &args[..]].concat());
    let mixed = v["result"]["efficiencies"]["link_mixed"].as_f64().unwrap();
    // 480 GB/s over 3/4 x 2^2 x 256 GB/s, unbent from the requests' 684: about 0.64.
    assert!((0.60..0.668).contains(&mixed), "{mixed}");
    let three = v["result"]["figures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["key"] == "interleaved_triad_gb_s")
        .unwrap()["value"]
        .as_f64()
        .unwrap();
    assert!(
        three < 480.0 * 0.8,
        "three links give less than the run's four: {three}"
    );
}

#[test]
fn theory_sends_an_nps_key_to_plan_numa() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.toml");
    std::fs::write(
        &file,
        "name = \"x\"\nchannels_per_socket = 12\nmts = 4800\nnps = 4\n",
    )
    .unwrap();
    let err = refused(&["theory", "--machine", file.to_str().unwrap()]);
    assert!(
        err.contains("line 4: unknown field `nps`") && err.contains("memfabric plan numa --nps N"),
        "{err}"
    );
}

#[test]
fn each_platform_explains_its_rule_with_its_own_dimm_counts() {
    let explain = |platform: &str| {
        let out = super::memfabric()
            .args([
                "plan",
                "population",
                "--platform",
                platform,
                "--capacity",
                "512G",
                "--explain",
            ])
            .assert()
            .success();
        String::from_utf8_lossy(&out.get_output().stdout).into_owned()
    };
    let xeon = explain("xeon-sp-2s");
    let rule = xeon.lines().find(|l| l.starts_with("Rule: ")).unwrap();
    assert!(!rule.contains("8 or 16"), "{rule}");
    assert!(xeon.contains("(6 channels per socket in 2 groups, up to 2 DIMMs per channel), DIMMs per socket: balanced at 6, 12;"), "{xeon}");
    // The counts the rule's sources publish, derived from each platform file.
    let rome = explain("epyc-7002-2s");
    assert!(
        rome.contains("balanced at 8, 16; near-balanced at 4, 12; unbalanced at 1, 2, 3,"),
        "{rome}"
    );
    let spr = explain("xeon-spr-2s");
    assert!(
        spr.contains("balanced at 4, 8, 16; unbalanced at 1, 2, 3, 5, 6,"),
        "{spr}"
    );
}
