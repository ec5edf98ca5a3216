//! `gpu` through the binary: where no NVIDIA driver is installed (CI, this project's
//! development machines) every subcommand is a skip that exits 0 and says why; bad
//! input is refused before any GPU is touched.

use serde_json::Value;

use super::memfabric;

/// Whether libcuda loads here, as the binary loads it.
pub fn driver_present() -> bool {
    memfabric_gpu::sys::driver_present()
}

const SUBCOMMANDS: [&[&str]; 7] = [
    &["info"],
    &["bandwidth", "--sizes", "4M"],
    &["latency", "--max", "64K"],
    &["copy", "--size", "1M"],
    &["host-latency", "--size", "1M"],
    &["loaded-latency", "--chase-size", "4M", "--gaps", "0"],
    &["injection"],
];

#[test]
fn without_a_driver_every_gpu_command_is_skipped_and_exits_0() {
    if driver_present() {
        eprintln!("an NVIDIA driver is installed here: this test is for machines without one");
        return;
    }
    for args in SUBCOMMANDS {
        let out = memfabric().arg("gpu").args(args).arg("--json").assert().success();
        let v: Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
        assert_eq!(v["command"], format!("gpu-{}", args[0]));
        let o = &v["result"]["outcome"];
        assert_eq!(o["status"], "skipped", "{args:?}: {o}");
        assert_eq!(
            o["reason"],
            "no NVIDIA driver found (libcuda.so could not be loaded)"
        );
        let text = memfabric().arg("gpu").args(args).assert().success();
        let text = String::from_utf8_lossy(&text.get_output().stdout).into_owned();
        assert!(
            text.contains("skipped: no NVIDIA driver found"),
            "{args:?}: {text}"
        );
    }
}

#[test]
fn bad_gpu_input_exits_2_with_one_clear_line() {
    let cases: [(&[&str], &str); 9] = [
        (&["latency", "--max", "17G"], "at most 16G"),
        (
            &["bandwidth", "--samples", "0"],
            "'--samples <N>': must be a number above 0, not 0",
        ),
        (
            &["bandwidth", "--block-threads", "100"],
            "--block-threads must be a multiple of 32",
        ),
        (&["bandwidth", "--sizes", "1000"], "--sizes: 1000 bytes"),
        (&["bandwidth", "--kernels", "scale"], "invalid value 'scale'"),
        (&["latency", "--stride", "6"], "--stride must be a multiple of 4"),
        (
            &["latency", "--min", "1M", "--max", "64K"],
            "--max at least --min",
        ),
        (&["copy", "--nodes", "7"], "node 7 does not exist (nodes: 0)"),
        (&["injection", "--size", "100"], "--size must be a multiple of 64"),
    ];
    for (args, want) in cases {
        let out = memfabric().arg("gpu").args(args).assert().code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

#[test]
fn gpu_help_teaches_the_subcommands() {
    let out = memfabric().args(["gpu", "--help"]).assert().success();
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    for word in [
        "bandwidth",
        "latency",
        "copy",
        "host-latency",
        "loaded-latency",
        "injection",
        "no NVIDIA",
    ] {
        assert!(text.contains(word), "{word}: {text}");
    }
}
