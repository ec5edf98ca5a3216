//! Text output of the GPU commands.

use memfabric_model::{
    format_size, GpuBandwidthReport, GpuCopyReport, GpuHostLatencyReport, GpuInfoReport, GpuInjectionReport,
    GpuLatencyReport, GpuLoadedLatencyReport, GpuRecord, GpuState, Outcome,
};

use crate::plot::{plot, PlotOptions};
use crate::table::Table;

fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or("-".into(), |v| v.to_string())
}

/// The outcome's one line where there is no result: skipped or failed, with why.
fn not_ok<T>(o: &Outcome<T>) -> Option<String> {
    match o {
        Outcome::Ok(_) => None,
        Outcome::Skipped { reason } => Some(format!("skipped: {reason}\n")),
        Outcome::Failed { reason } => Some(format!("FAILED: {reason}\n")),
    }
}

/// A table cell for an outcome without a value, and its reason kept for below the table.
fn short<T>(o: &Outcome<T>, label: String, notes: &mut Vec<String>) -> String {
    match o {
        Outcome::Ok(_) => String::new(),
        Outcome::Skipped { reason } => {
            notes.push(format!("  {label}: skipped: {reason}\n"));
            "skipped".into()
        }
        Outcome::Failed { reason } => {
            notes.push(format!("  ! {label}: FAILED: {reason}\n"));
            "FAILED".into()
        }
    }
}

fn state(s: &GpuState) -> String {
    format!(
        "SM {} MHz, memory {} MHz, {} W, {} C",
        opt(s.sm_clock_mhz),
        opt(s.memory_clock_mhz),
        s.power_w.map_or("-".into(), |w| format!("{w:.0}")),
        opt(s.temperature_c)
    )
}

/// What the GPU is and its state at start and end: the head of every GPU result.
pub fn render_record(r: Option<&GpuRecord>) -> String {
    let Some(r) = r else {
        return String::new();
    };
    let i = &r.info;
    let pcie = i.pcie.as_ref().map_or("unknown".to_string(), |p| {
        format!(
            "Gen{} x{} (max Gen{} x{}, {})",
            opt(p.generation),
            opt(p.width),
            opt(p.max_generation),
            opt(p.max_width),
            p.source
        )
    });
    let mut out = format!(
        "GPU {}: {} (compute {}), {} SMs, {} memory, {} L2\n\
         memory: {}-bit at {:.0} MHz: peak {}; SM clock up to {:.0} MHz\n\
         PCI {} on NUMA node {}, PCIe {}; driver {}, CUDA {}\n\
         at start: {}\nat end:   {}\n",
        i.ordinal,
        i.name,
        i.compute_capability,
        i.sm_count,
        format_size(i.memory_bytes),
        format_size(i.l2_bytes),
        i.memory_bus_width_bits,
        i.memory_clock_mhz,
        i.peak_memory_gb_s
            .map_or("unknown".into(), |p| format!("{p:.0} GB/s")),
        i.sm_clock_mhz,
        i.pci_bus_id,
        opt(i.numa_node),
        pcie,
        i.driver_version.as_deref().unwrap_or("-"),
        i.cuda_version,
        state(&r.start),
        state(&r.end),
    );
    if let Some(n) = &i.nvml {
        out += &format!("(no clocks, power or temperature: {n})\n");
    }
    out
}

pub fn info(r: &GpuInfoReport) -> String {
    match &r.outcome {
        Outcome::Ok(rec) => render_record(Some(rec)),
        o => not_ok(o).unwrap_or_default(),
    }
}

pub fn render_bandwidth(r: &GpuBandwidthReport) -> String {
    let mut out = render_record(r.gpu.as_ref());
    let Outcome::Ok(m) = &r.outcome else {
        return out + &not_ok(&r.outcome).unwrap_or_default();
    };
    out += &format!(
        "Device-memory bandwidth, GB/s (10^9 B/s; bytes counted as BabelStream counts them), {} threads per block, {} samples per point\n",
        r.block_threads, r.samples
    );
    let mut t = Table::new(&[
        "<kernel",
        "array",
        "blocks",
        "best GB/s",
        "median",
        "min",
        "cv %",
        "% of peak",
        "checked",
    ]);
    for p in &m.points {
        let b = &p.bandwidth_gb_s;
        t.row(vec![
            p.kernel.name().into(),
            format_size(p.array_bytes),
            p.grid_blocks.to_string(),
            format!("{:.1}", b.max),
            format!("{:.1}", b.median),
            format!("{:.1}", b.min),
            format!("{:.1}", 100.0 * b.cv),
            p.best_fraction_of_peak
                .map_or("-".into(), |f| format!("{:.1}", 100.0 * f)),
            if p.validated_elements == 0 {
                "-".into()
            } else {
                format!("{} ok", p.validated_elements)
            },
        ]);
    }
    out += &t.render();
    out += "Bytes counted: read 8 and write 8 per element, copy 16 (c = a), triad 24 (a = b + s*c)\n";
    out
}

pub fn latency(r: &GpuLatencyReport) -> String {
    let mut out = render_record(r.gpu.as_ref());
    let Outcome::Ok(m) = &r.outcome else {
        return out + &not_ok(&r.outcome).unwrap_or_default();
    };
    out += &format!(
        "One GPU thread's pointer chase, {} B stride, random order\n",
        r.stride_bytes
    );
    let series: Vec<(f64, f64)> = m
        .points
        .iter()
        .map(|p| (p.size_bytes as f64, p.latency_cycles))
        .collect();
    let marks: Vec<f64> = m.levels.iter().skip(1).map(|l| l.first_bytes as f64).collect();
    out += &plot(
        &series,
        &PlotOptions {
            width: 64,
            height: 12,
            log_x: true,
            log_y: true,
            marks: &marks,
            x_label: &|x| format_size(x as u64),
            y_label: &|y| format!("{y:.0} cyc"),
        },
    );
    let mut t = Table::new(&["<level", "from", "to", "cycles", "ns"]);
    for l in &m.levels {
        t.row(vec![
            l.name.clone(),
            format_size(l.first_bytes),
            format_size(l.last_bytes),
            format!("{:.0}", l.latency_cycles),
            format!("{:.1}", l.latency_ns),
        ]);
    }
    out += &t.render();
    let mut pts = Table::new(&["size", "cycles", "ns", "SM MHz"]);
    for p in &m.points {
        pts.row(vec![
            format_size(p.size_bytes),
            format!("{:.1}", p.latency_cycles),
            format!("{:.1}", p.latency_ns),
            format!("{:.0}", p.sm_clock_mhz),
        ]);
    }
    out + &pts.render()
}

pub fn copy(r: &GpuCopyReport) -> String {
    let mut out = render_record(r.gpu.as_ref());
    let Outcome::Ok(cells) = &r.outcome else {
        return out + &not_ok(&r.outcome).unwrap_or_default();
    };
    out += &format!(
        "Host<->device copies of {} each way, GB/s (10^9 B/s; bidirectional counts both ways), {} samples\n",
        format_size(r.size_bytes),
        r.samples
    );
    let mut t = Table::new(&[
        "<memory",
        "node",
        "<engine",
        "<direction",
        "median GB/s",
        "max",
        "cv %",
    ]);
    let mut notes = Vec::new();
    for c in cells {
        let mut row = vec![
            c.memory.name().into(),
            opt(c.node),
            c.engine.name().into(),
            c.direction.name().into(),
        ];
        match &c.outcome {
            Outcome::Ok(m) => row.extend([
                format!("{:.1}", m.bandwidth_gb_s.median),
                format!("{:.1}", m.bandwidth_gb_s.max),
                format!("{:.1}", 100.0 * m.bandwidth_gb_s.cv),
            ]),
            o => {
                let node = c.node.map(|n| format!(" node {n}")).unwrap_or_default();
                let label = format!(
                    "{}{node} {} {}",
                    c.memory.name(),
                    c.engine.name(),
                    c.direction.name()
                );
                row.push(short(o, label, &mut notes));
            }
        }
        t.row(row);
    }
    out + &t.render() + &notes.concat()
}

pub fn host_latency(r: &GpuHostLatencyReport) -> String {
    let mut out = render_record(r.gpu.as_ref());
    let Outcome::Ok(cells) = &r.outcome else {
        return out + &not_ok(&r.outcome).unwrap_or_default();
    };
    out += &format!(
        "GPU loads from host memory mapped into the GPU: a {} chase, {} B stride\n",
        format_size(r.size_bytes),
        r.stride_bytes
    );
    let mut t = Table::new(&["node", "median ns", "min", "cv %", "cycles"]);
    let mut notes = Vec::new();
    for c in cells {
        let mut row = vec![c.node.to_string()];
        match &c.outcome {
            Outcome::Ok(m) => row.extend([
                format!("{:.0}", m.latency_ns.median),
                format!("{:.0}", m.latency_ns.min),
                format!("{:.1}", 100.0 * m.latency_ns.cv),
                format!("{:.0}", m.latency_cycles.median),
            ]),
            o => row.push(short(o, format!("node {}", c.node), &mut notes)),
        }
        t.row(row);
    }
    out + &t.render() + &notes.concat()
}

pub fn loaded(r: &GpuLoadedLatencyReport) -> String {
    let mut out = render_record(r.gpu.as_ref());
    let Outcome::Ok(points) = &r.outcome else {
        return out + &not_ok(&r.outcome).unwrap_or_default();
    };
    out += &format!(
        "CPU {} chasing {} on node {} while the copy engines move {} copies ({}) to and from node {}\n",
        r.cpu,
        format_size(r.chase_bytes),
        r.node,
        format_size(r.copy_bytes),
        r.direction.name(),
        r.node
    );
    let mut t = Table::new(&["gap µs", "DMA GB/s", "median ns", "p99", "cv %"]);
    let mut notes = Vec::new();
    for p in points {
        let mut row = vec![
            p.gap_us.map_or("idle".into(), |g| g.to_string()),
            format!("{:.1}", p.dma_gb_s),
        ];
        match &p.latency {
            Outcome::Ok(m) => row.extend([
                format!("{:.1}", m.latency_ns.median),
                format!("{:.1}", m.latency_ns.p99),
                format!("{:.1}", 100.0 * m.latency_ns.cv),
            ]),
            o => {
                let label = p.gap_us.map_or("idle".into(), |g| format!("gap {g} µs"));
                row.push(short(o, label, &mut notes));
            }
        }
        t.row(row);
    }
    out + &t.render() + &notes.concat()
}

pub fn injection(r: &GpuInjectionReport) -> String {
    let mut out = render_record(r.gpu.as_ref());
    let Outcome::Ok(m) = &r.outcome else {
        return out + &not_ok(&r.outcome).unwrap_or_default();
    };
    out += &format!(
        "CPU {} walking a {} buffer on node {} once, one load per line:\n",
        r.cpu,
        format_size(r.buffer_bytes),
        r.node
    );
    let mut t = Table::new(&["<last written by", "median ns", "min", "cv %"]);
    for c in &m.cases {
        t.row(vec![
            c.case.name().into(),
            format!("{:.1}", c.latency_ns.median),
            format!("{:.1}", c.latency_ns.min),
            format!("{:.1}", 100.0 * c.latency_ns.cv),
        ]);
    }
    out += &t.render();
    out + &format!("{}\n", m.explanation)
}

#[cfg(test)]
mod tests;
