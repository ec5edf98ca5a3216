//! Firmware (SLIT, HMAT) figures beside a measured matrix, and where they
//! disagree; called from the latency and bandwidth renderers.

use memfabric_analysis::theory::num;
use memfabric_model::FirmwareComparison;

use super::common;

/// The comparison as a matrix of `SLIT / HMAT / measured` cells, then the
/// disagreements; empty when the firmware publishes nothing for the cells.
pub fn render(f: Option<&FirmwareComparison>) -> String {
    let Some(f) = f else { return String::new() };
    let bandwidth = f.measured_what.contains("GB/s");
    let hmat_unit = if bandwidth {
        "HMAT read GB/s"
    } else {
        "HMAT read ns"
    };
    let mut rows: Vec<u32> = f.cells.iter().map(|c| c.cpu_node).collect();
    let mut cols: Vec<u32> = f.cells.iter().map(|c| c.mem_node).collect();
    for v in [&mut rows, &mut cols] {
        v.sort_unstable();
        v.dedup();
    }
    let dash = || "-".to_string();
    let cell = |r: u32, c: u32| {
        let x = f.cells.iter().find(|x| x.cpu_node == r && x.mem_node == c)?;
        let hmat = if bandwidth {
            x.hmat_read_bandwidth_gb_s.map(num)
        } else {
            x.hmat_read_latency_ns.map(|v| v.to_string())
        };
        Some(format!(
            "{} / {} / {}",
            x.slit_distance.map_or_else(dash, |d| d.to_string()),
            hmat.unwrap_or_else(dash),
            x.measured.map_or_else(dash, |m| format!("{m:.1}"))
        ))
    };
    let title = format!(
        "Firmware beside measured: SLIT distance / {hmat_unit} / measured {}",
        f.measured_what
    );
    let mut out = format!("\n{}", common::matrix(&title, &rows, &cols, cell));
    if f.disagreements.is_empty() {
        out += "Firmware and measurement agree (order within 10 %, ratios within 2x).\n";
    } else {
        out += "Firmware and measurement disagree:\n";
        for d in &f.disagreements {
            out += &format!("  ! {d}\n");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfabric_model::FirmwareCell;

    #[test]
    fn matrix_and_flags() {
        let cell = |c, m, d, h, v| FirmwareCell {
            cpu_node: c,
            mem_node: m,
            slit_distance: Some(d),
            hmat_read_latency_ns: h,
            hmat_read_bandwidth_gb_s: None,
            measured: Some(v),
        };
        let f = FirmwareComparison {
            measured_what: "median ns per load".into(),
            cells: vec![
                cell(0, 0, 10, Some(80), 92.25),
                cell(0, 1, 21, None, 151.0),
                cell(1, 0, 21, None, 149.5),
                cell(1, 1, 10, Some(80), 90.0),
            ],
            disagreements: vec!["node 0 -> node 1: an example".into()],
        };
        insta::assert_snapshot!(render(Some(&f)));
        assert_eq!(render(None), "");
    }
}
