//! Every published figure the planner predicts, one test per row, each
//! within its tolerance: ±5 % where the row was used to calibrate the
//! platform file, ±10 % otherwise (tighter where the figure is arithmetic).
//! `docs/REPRODUCE.md` shows the same rows; a test holds it to them.

use memfabric_analysis::provision::population::population;
use memfabric_analysis::provision::{numa_plan, LinkChoice, NumaPlan, Platform};

fn platform(file: &str) -> Platform {
    let path = format!("{}/../../platforms/{file}.toml", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("platform file");
    let p: Platform = toml::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"));
    p.validate().unwrap_or_else(|e| panic!("{path}: {e}"));
    p
}

fn plan(file: &str, nps: u32, count: u32, lanes: Option<u32>, gbps: Option<f64>) -> NumaPlan {
    let choice = LinkChoice {
        count: Some(count),
        lanes,
        gbps,
    };
    numa_plan(&platform(file), nps, choice, None).expect("a plan")
}

/// A Genoa figure with `links` links of `lanes` at `gbps`.
fn genoa(nps: u32, links: u32, lanes: u32, gbps: f64, key: &str) -> f64 {
    let p = plan("epyc-9004-2s", nps, links, Some(lanes), Some(gbps));
    p.value(key)
        .unwrap_or_else(|| panic!("no {key} in {:?}", p.figures))
}

/// Both directions of the links, raw (LP1852 Table 1).
fn genoa_links(links: u32, lanes: u32, gbps: f64) -> f64 {
    let p = plan("epyc-9004-2s", 1, links, Some(lanes), Some(gbps));
    2.0 * p.links.expect("links").gb_s_per_direction
}

fn socket_peak(file: &str, dimms: u32) -> f64 {
    let p = platform(file);
    population(&p, p.memory.dimms[0], dimms)
        .expect("population")
        .peak_gb_s
        / f64::from(p.sockets)
}

struct Row {
    id: &'static str,
    what: &'static str,
    published: f64,
    unit: &'static str,
    /// Percent either way.
    tolerance: f64,
    calibrated: bool,
    source: &'static str,
    predict: fn() -> f64,
}

impl Row {
    fn error_pct(&self, predicted: f64) -> f64 {
        (predicted / self.published - 1.0) * 100.0
    }

    /// The error as the page shows it: one decimal, no "-0.0".
    fn error_text(&self, predicted: f64) -> String {
        let tenths = (self.error_pct(predicted) * 10.0).round();
        if tenths == 0.0 {
            "0.0 %".into()
        } else {
            format!("{:+.1} %", tenths / 10.0)
        }
    }

    /// The row as docs/REPRODUCE.md shows it.
    fn line(&self) -> String {
        let predicted = (self.predict)();
        format!(
            "| {} | {} | {} {} | {:.1} | {} | ±{} %{} | {} |",
            self.id,
            self.what,
            self.published,
            self.unit,
            predicted,
            self.error_text(predicted),
            self.tolerance,
            if self.calibrated { ", calibrated" } else { "" },
            self.source
        )
    }

    fn check(&self) {
        let predicted = (self.predict)();
        let err = self.error_pct(predicted);
        assert!(
            err.abs() <= self.tolerance,
            "{}: {} published {}, predicted {predicted:.2} ({err:+.2} %, ±{} % allowed)",
            self.id,
            self.what,
            self.published,
            self.tolerance
        );
        if self.calibrated {
            assert!(
                self.tolerance <= 5.0,
                "{}: a calibration row is held to ±5 %",
                self.id
            );
        }
    }
}

macro_rules! rows {
    ($($test:ident: $id:literal, $what:literal, $published:expr, $unit:literal, $tol:expr, $cal:expr, $source:literal, $predict:expr;)*) => {
        const ROWS: &[Row] = &[$(Row {
            id: $id,
            what: $what,
            published: $published,
            unit: $unit,
            tolerance: $tol,
            calibrated: $cal,
            source: $source,
            predict: $predict,
        }),*];
        $(#[test] fn $test() {
            ROWS.iter().find(|r| r.id == $id).expect("row").check();
        })*
    };
}

const T1: &str = "LP1852 Table 1";
const T2: &str = "LP1852 Table 2";

rows! {
    t1_4x16_32: "1.1", "xGMI raw, both directions, 4 links x16 at 32 Gbit/s", 512.0, "GB/s", 0.1, false, "LP1852 Table 1", || genoa_links(4, 16, 32.0);
    t1_3x16_32: "1.2", "xGMI raw, both directions, 3 links x16 at 32 Gbit/s", 384.0, "GB/s", 0.1, false, "LP1852 Table 1", || genoa_links(3, 16, 32.0);
    t1_4x4_16: "1.3", "xGMI raw, both directions, 4 links x4 at 16 Gbit/s", 64.0, "GB/s", 0.1, false, "LP1852 Table 1", || genoa_links(4, 4, 16.0);
    t1_3x4_16: "1.4", "xGMI raw, both directions, 3 links x4 at 16 Gbit/s", 48.0, "GB/s", 0.1, false, "LP1852 Table 1", || genoa_links(3, 4, 16.0);
    t2_12: "2.1", "one socket's peak, 12 DDR5-4800 DIMMs", 460.8, "GB/s", 0.1, false, "LP1852 Table 2", || socket_peak("epyc-9004-2s", 12);
    t2_10: "2.2", "one socket's peak, 10 DIMMs", 384.0, "GB/s", 0.1, false, "LP1852 Table 2", || socket_peak("epyc-9004-2s", 10);
    t2_8: "2.3", "one socket's peak, 8 DIMMs", 307.2, "GB/s", 0.1, false, "LP1852 Table 2", || socket_peak("epyc-9004-2s", 8);
    t2_6: "2.4", "one socket's peak, 6 DIMMs", 230.4, "GB/s", 0.1, false, "LP1852 Table 2", || socket_peak("epyc-9004-2s", 6);
    t2_4: "2.5", "one socket's peak, 4 DIMMs", 153.6, "GB/s", 0.1, false, "LP1852 Table 2", || socket_peak("epyc-9004-2s", 4);
    t2_2: "2.6", "one socket's peak, 2 DIMMs", 76.8, "GB/s", 0.1, false, "LP1852 Table 2", || socket_peak("epyc-9004-2s", 2);
    t2_1: "2.7", "one socket's peak, 1 DIMM", 38.4, "GB/s", 0.1, false, "LP1852 Table 2", || socket_peak("epyc-9004-2s", 1);
    t4_3x16_32: "4.1", "NPS0 Triad, 3 links x16 at 32 Gbit/s", 373.0, "GB/s", 5.0, true, "LP1852 Table 4", || genoa(0, 3, 16, 32.0, "system_triad_gb_s");
    t4_4x16_32: "4.2", "NPS0 Triad, 4 links x16 at 32 Gbit/s", 491.0, "GB/s", 5.0, true, "LP1852 Table 4", || genoa(0, 4, 16, 32.0, "system_triad_gb_s");
    t4_3x4_16: "4.3", "NPS0 Triad, 3 links x4 at 16 Gbit/s", 47.0, "GB/s", 5.0, true, "LP1852 Table 4", || genoa(0, 3, 4, 16.0, "system_triad_gb_s");
    t4_4x4_16: "4.4", "NPS0 Triad, 4 links x4 at 16 Gbit/s", 63.0, "GB/s", 5.0, true, "LP1852 Table 4", || genoa(0, 4, 4, 16.0, "system_triad_gb_s");
    t5_4_16_local_ns: "5.1", "NPS1 local latency, 4 links x4 at 16 Gbit/s", 110.5, "ns", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 4, 16.0, "local_latency_ns");
    t5_4_16_remote_ns: "5.2", "NPS1 remote latency, x4 at 16 Gbit/s", 351.8, "ns", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 4, 16.0, "remote_latency_ns");
    t5_4_16_local_bw: "5.3", "NPS1 local read bandwidth, x4 at 16 Gbit/s", 369.6, "GB/s", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 4, 16.0, "local_read_gb_s");
    t5_4_16_remote_bw: "5.4", "NPS1 remote read bandwidth, x4 at 16 Gbit/s", 24.8, "GB/s", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 4, 16.0, "remote_read_gb_s");
    t5_4_32_local_ns: "5.5", "NPS1 local latency, x4 at 32 Gbit/s", 110.8, "ns", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 4, 32.0, "local_latency_ns");
    t5_4_32_remote_ns: "5.6", "NPS1 remote latency, x4 at 32 Gbit/s", 250.7, "ns", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 4, 32.0, "remote_latency_ns");
    t5_4_32_local_bw: "5.7", "NPS1 local read bandwidth, x4 at 32 Gbit/s", 369.8, "GB/s", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 4, 32.0, "local_read_gb_s");
    t5_4_32_remote_bw: "5.8", "NPS1 remote read bandwidth, x4 at 32 Gbit/s", 50.1, "GB/s", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 4, 32.0, "remote_read_gb_s");
    t5_16_16_local_ns: "5.9", "NPS1 local latency, x16 at 16 Gbit/s", 110.4, "ns", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 16, 16.0, "local_latency_ns");
    t5_16_16_remote_ns: "5.10", "NPS1 remote latency, x16 at 16 Gbit/s", 244.6, "ns", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 16, 16.0, "remote_latency_ns");
    t5_16_16_local_bw: "5.11", "NPS1 local read bandwidth, x16 at 16 Gbit/s", 369.8, "GB/s", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 16, 16.0, "local_read_gb_s");
    t5_16_16_remote_bw: "5.12", "NPS1 remote read bandwidth, x16 at 16 Gbit/s", 90.6, "GB/s", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 16, 16.0, "remote_read_gb_s");
    t5_16_32_local_ns: "5.13", "NPS1 local latency, x16 at 32 Gbit/s", 110.4, "ns", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 16, 32.0, "local_latency_ns");
    t5_16_32_remote_ns: "5.14", "NPS1 remote latency, x16 at 32 Gbit/s", 199.1, "ns", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 16, 32.0, "remote_latency_ns");
    t5_16_32_local_bw: "5.15", "NPS1 local read bandwidth, x16 at 32 Gbit/s", 370.2, "GB/s", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 16, 32.0, "local_read_gb_s");
    t5_16_32_remote_bw: "5.16", "NPS1 remote read bandwidth, x16 at 32 Gbit/s", 152.2, "GB/s", 5.0, true, "LP1852 Table 5", || genoa(1, 4, 16, 32.0, "remote_read_gb_s");
    mccalpin_remote: "M.1", "Xeon Platinum 8160, 2 UPI links: remote reads", 34.0, "GB/s", 5.0, false, "McCalpin, 2S Xeon Platinum 8160", || plan("xeon-sp-2s", 1, 2, None, None).value("remote_read_gb_s").unwrap();
    mccalpin_local: "M.2", "Xeon Platinum 8160: local reads, one socket", 112.0, "GB/s", 10.0, false, "McCalpin, 2S Xeon Platinum 8160", || plan("xeon-sp-2s", 1, 2, None, None).value("local_read_gb_s").unwrap();
    apu_peak: "A.1", "256-bit LPDDR5X-8000 peak", 256.0, "GB/s", 0.1, false, "AMD, 256-bit LPDDR5X-8000", || platform("apu-lpddr5x-256").socket_peak_gb_s();
    grace_peak: "G.1", "Grace CPU Superchip peak, both CPUs", 1000.0, "GB/s", 3.0, false, "NVIDIA Grace Superchip", || 2.0 * platform("grace-superchip").socket_peak_gb_s();
    grace_one: "G.2", "Grace, Triad on one CPU (120 GB)", 450.0, "GB/s", 5.0, true, "NVIDIA Grace benchmarking guide", || numa_plan(&platform("grace-superchip"), 1, LinkChoice::default(), None).unwrap().value("local_triad_gb_s").unwrap();
    grace_both: "G.3", "Grace, Triad on both CPUs", 900.0, "GB/s", 2.0, false, "NVIDIA Grace benchmarking guide", || numa_plan(&platform("grace-superchip"), 1, LinkChoice::default(), None).unwrap().value("system_triad_gb_s").unwrap();
}

#[test]
fn the_sources_are_named_once() {
    assert!(ROWS.iter().filter(|r| r.source == T1).count() == 4);
    assert!(ROWS.iter().filter(|r| r.source == T2).count() == 7);
}

/// docs/REPRODUCE.md holds every row as the tests compute it, so the page
/// cannot drift from the model.
#[test]
fn reproduce_md_shows_every_row() {
    let path = format!("{}/../../docs/REPRODUCE.md", env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(&path).expect("docs/REPRODUCE.md");
    let missing: Vec<String> = ROWS
        .iter()
        .map(Row::line)
        .filter(|l| !doc.contains(l.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "docs/REPRODUCE.md lacks (or has other figures for):\n{}",
        missing.join("\n")
    );
}
