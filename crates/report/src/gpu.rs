//! GPU sections: the GPU and its state, device-memory bandwidth, the latency curve
//! with its levels, and host<->device copies; or why there is none.

use memfabric_model::{GpuBandwidthReport, GpuCopyReport, GpuLatencyReport, GpuRecord, Outcome};

use crate::svg::{esc, LineChart, Series};

pub(crate) fn reason<T>(o: &Outcome<T>) -> Option<String> {
    match o {
        Outcome::Ok(_) => None,
        Outcome::Skipped { reason } => Some(format!("<p class=\"meta\">Skipped: {}</p>", esc(reason))),
        Outcome::Failed { reason } => Some(format!("<p class=\"bad\">Failed: {}</p>", esc(reason))),
    }
}

fn record(r: Option<&GpuRecord>) -> String {
    let Some(r) = r else {
        return String::new();
    };
    let i = &r.info;
    let state = |s: &memfabric_model::GpuState| {
        format!(
            "SM {} MHz, {} W, {} °C",
            s.sm_clock_mhz.map_or("-".into(), |v| v.to_string()),
            s.power_w.map_or("-".into(), |w| format!("{w:.0}")),
            s.temperature_c.map_or("-".into(), |v| v.to_string())
        )
    };
    format!(
        "<p class=\"meta\">{} (compute {}), {} SMs, peak {} · PCI {} on node {} · driver {}, CUDA {} · start: {} · end: {}</p>",
        esc(&i.name),
        esc(&i.compute_capability),
        i.sm_count,
        i.peak_memory_gb_s.map_or("unknown".into(), |p| format!("{p:.0} GB/s")),
        esc(&i.pci_bus_id),
        i.numa_node.map_or("-".into(), |n| n.to_string()),
        esc(i.driver_version.as_deref().unwrap_or("-")),
        esc(&i.cuda_version),
        state(&r.start),
        state(&r.end)
    )
}

pub fn bandwidth(r: &GpuBandwidthReport) -> String {
    let mut s = record(r.gpu.as_ref());
    let Outcome::Ok(m) = &r.outcome else {
        return s + &reason(&r.outcome).unwrap_or_default();
    };
    s += "<table><tr><th class=\"l\">kernel</th><th>array MiB</th><th>best GB/s</th><th>median GB/s</th><th>% of peak</th></tr>";
    for p in &m.points {
        s += &format!(
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td></tr>",
            p.kernel.name(),
            p.array_bytes >> 20,
            p.bandwidth_gb_s.max,
            p.bandwidth_gb_s.median,
            p.best_fraction_of_peak
                .map_or("-".into(), |f| format!("{:.1}", 100.0 * f))
        );
    }
    s + "</table>"
}

pub fn latency(r: &GpuLatencyReport) -> String {
    let mut s = record(r.gpu.as_ref());
    let Outcome::Ok(m) = &r.outcome else {
        return s + &reason(&r.outcome).unwrap_or_default();
    };
    s += &LineChart {
        title: "GPU pointer-chase latency vs working set",
        x_label: "working set",
        y_label: "SM cycles per load",
        series: vec![Series {
            name: "one thread".into(),
            points: m
                .points
                .iter()
                .map(|p| (p.size_bytes as f64, p.latency_cycles))
                .collect(),
        }],
        log2_x: true,
        marks: m
            .levels
            .iter()
            .skip(1)
            .map(|l| (l.first_bytes as f64, l.name.clone()))
            .collect(),
    }
    .render();
    s += "<table><tr><th class=\"l\">level</th><th>cycles</th><th>ns</th></tr>";
    for l in &m.levels {
        s += &format!(
            "<tr><td class=\"l\">{}</td><td>{:.0}</td><td>{:.1}</td></tr>",
            esc(&l.name),
            l.latency_cycles,
            l.latency_ns
        );
    }
    s + "</table>"
}

pub fn copy(r: &GpuCopyReport) -> String {
    let mut s = record(r.gpu.as_ref());
    let Outcome::Ok(cells) = &r.outcome else {
        return s + &reason(&r.outcome).unwrap_or_default();
    };
    s += "<table><tr><th class=\"l\">memory</th><th>node</th><th class=\"l\">engine</th><th class=\"l\">direction</th><th>median GB/s</th></tr>";
    for c in cells {
        let v = match &c.outcome {
            Outcome::Ok(m) => format!("<td>{:.1}</td>", m.bandwidth_gb_s.median),
            o => format!(
                "<td class=\"bad\">{}</td>",
                reason(o).map(|r| esc(&r)).unwrap_or_default()
            ),
        };
        s += &format!(
            "<tr><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td>{v}</tr>",
            c.memory.name(),
            c.node.map_or("-".into(), |n| n.to_string()),
            c.engine.name(),
            c.direction.name()
        );
    }
    s + "</table>"
}
