//! One section per measurement a document holds: topology summary, heatmaps of the
//! matrices with their latency tiers, curves, and tables.

use memfabric_model::{
    BandwidthReport, Document, DramTraffic, LatencyReport, LoadedLatencyReport, Outcome, StreamReport,
    SweepLevels, SweepReport,
};
use memfabric_topo::Topology;

use crate::svg::{esc, Heatmap, LineChart, Series};

/// (title, HTML) for every section the document has, in a fixed order: for a run,
/// the topology and then each cell of the suite.
pub fn sections(doc: &Document) -> Vec<(String, String)> {
    match doc {
        Document::Run(r) => {
            let mut out = vec![("Topology".to_string(), topology(&r.topology))];
            out.extend(
                r.parts()
                    .iter()
                    .map(|(c, d)| (c.title().to_string(), annotated(d))),
            );
            out
        }
        other => vec![(title(other).to_string(), annotated(other))],
    }
}

/// A section's body between how its figures were taken and what to keep in mind
/// about them, as the terminal prints them.
fn annotated(doc: &Document) -> String {
    // One serialisation serves both: the setup and the caveats read fields by name.
    let v = serde_json::to_value(doc).unwrap_or_default();
    crate::caveats::setup(&v) + &body(doc) + &crate::caveats::caveats(doc, &v)
}

/// The heading of a document's one section.
fn title(doc: &Document) -> &'static str {
    match doc {
        Document::Latency(_) => "Idle latency",
        Document::Bandwidth(_) => "Bandwidth",
        Document::BandwidthDomains(_) => "Bandwidth per L3 domain",
        Document::BandwidthConcurrent(_) => "Bandwidth, streams at once",
        Document::Stream(_) => "STREAM",
        Document::LoadedLatency(_) => "Loaded latency",
        Document::C2c(_) => "Core-to-core latency",
        Document::Sweep(_) => "Cache hierarchy sweep",
        Document::Monitor(_) => "Memory traffic",
        Document::GpuInfo(_) => "GPU",
        Document::GpuBandwidth(_) => "GPU memory bandwidth",
        Document::GpuLatency(_) => "GPU memory latency",
        Document::GpuCopy(_) => "Host-device copies",
        Document::GpuHostLatency(_) => "GPU loads from host memory",
        Document::GpuLoadedLatency(_) => "CPU latency under DMA load",
        Document::GpuInjection(_) => "Cache injection",
        Document::Run(_) => "Run",
    }
}

/// A document's section. Kinds without a drawing of their own show their outcome
/// and their figures as a table, so no document renders as an empty section.
fn body(doc: &Document) -> String {
    match doc {
        Document::Latency(r) => latency(r),
        Document::Bandwidth(r) => bandwidth(r),
        Document::Stream(r) => stream(r),
        Document::LoadedLatency(r) => loaded(r),
        Document::C2c(r) => crate::c2c::c2c(r),
        Document::Sweep(r) => sweep(r),
        Document::GpuBandwidth(r) => crate::gpu::bandwidth(r),
        Document::GpuLatency(r) => crate::gpu::latency(r),
        Document::GpuCopy(r) => crate::gpu::copy(r),
        Document::BandwidthDomains(_) => figures(doc, None),
        Document::BandwidthConcurrent(r) => crate::concurrent::concurrent(r),
        Document::Monitor(r) => crate::monitor::monitor(r) + &figures(doc, None),
        Document::GpuInfo(r) => figures(doc, crate::gpu::reason(&r.outcome)),
        Document::GpuHostLatency(r) => figures(doc, crate::gpu::reason(&r.outcome)),
        Document::GpuLoadedLatency(r) => figures(doc, crate::gpu::reason(&r.outcome)),
        Document::GpuInjection(r) => figures(doc, crate::gpu::reason(&r.outcome)),
        // A run's cells are sections of their own (see `sections`).
        Document::Run(_) => figures(doc, None),
    }
}

/// Why there is no result (where there is none), then every figure in a table.
fn figures(doc: &Document, why: Option<String>) -> String {
    let mut s = why.unwrap_or_default();
    let figs = doc.figures();
    if figs.is_empty() {
        if s.is_empty() {
            s += "<p class=\"meta\">No figures.</p>";
        }
        return s;
    }
    s += "<table><tr><th class=\"l\">what</th><th class=\"l\">metric</th><th>value</th><th>min</th><th>max</th></tr>";
    for f in figs {
        let what: Vec<String> = f.dims.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let opt = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.2}"));
        s += &format!(
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{:.2}</td><td>{}</td><td>{}</td></tr>",
            esc(&what.join(" ")),
            esc(&f.metric),
            f.value,
            opt(f.min),
            opt(f.max)
        );
    }
    s + "</table>"
}

fn topology(t: &Topology) -> String {
    let mut s = format!(
        "<p>{} package(s), {} die(s), {} L3 domain(s), {} NUMA node(s), {} CPUs.</p>",
        t.packages.len(),
        t.dies.len(),
        t.l3_domains.len(),
        t.nodes.len(),
        t.cpus.len()
    );
    s += "<table><tr><th>node</th><th class=\"l\">CPUs</th><th>memory GiB</th><th class=\"l\">note</th></tr>";
    for n in &t.nodes {
        let cpus: Vec<String> = n.cpus.iter().map(u32::to_string).collect();
        let gib = n.mem_total_bytes as f64 / f64::from(1u32 << 30);
        let note = if n.cpu_less { "CPU-less" } else { "" };
        s += &format!(
            "<tr><td>{}</td><td class=\"l\">{}</td><td>{gib:.1}</td><td class=\"l\">{note}</td></tr>",
            n.id,
            esc(&cpus.join(","))
        );
    }
    s + "</table>"
}

fn matrix<T>(
    rows: &[u32],
    cols: &[u32],
    cells: &[(u32, u32, &Outcome<T>)],
    value: impl Fn(&T) -> f64,
) -> Vec<Vec<Option<f64>>> {
    rows.iter()
        .map(|&r| {
            cols.iter()
                .map(|&c| {
                    cells
                        .iter()
                        .find(|(a, b, _)| *a == r && *b == c)
                        .and_then(|(_, _, o)| o.ok().map(&value))
                })
                .collect()
        })
        .collect()
}

fn names(v: &[u32]) -> Vec<String> {
    v.iter().map(u32::to_string).collect()
}

fn latency(r: &LatencyReport) -> String {
    let cells: Vec<_> = r
        .cells
        .iter()
        .map(|c| (c.cpu_node, c.mem_node, &c.outcome))
        .collect();
    let map = Heatmap {
        title: "Idle latency, median ns",
        row_label: "CPU node",
        col_label: "memory node",
        rows: names(&r.cpu_nodes),
        cols: names(&r.mem_nodes),
        values: matrix(&r.cpu_nodes, &r.mem_nodes, &cells, |m| m.latency_ns.median),
        unit: "ns",
        decimals: 1,
    };
    let mut s = map.render();
    let tiers = r.tiers(memfabric_model::tiers::DEFAULT_REL_GAP);
    if tiers.len() > 1 {
        s += "<p>Latency tiers (cells grouped where latency steps up by more than 8 %):</p><table><tr><th>tier</th><th>ns</th><th class=\"l\">CPU node → memory node</th></tr>";
        for t in &tiers {
            let pairs: Vec<String> = t
                .cells
                .iter()
                .map(|c| format!("{}→{}", c.cpu_node, c.mem_node))
                .collect();
            s += &format!(
                "<tr><td>{}</td><td>{:.1}-{:.1}</td><td class=\"l\">{}</td></tr>",
                t.index,
                t.min_ns,
                t.max_ns,
                esc(&pairs.join(" "))
            );
        }
        s += "</table>";
    }
    s + &format!(
        "<p class=\"meta\">Pattern {:?}, {} MiB buffer, stride {} B.</p>",
        r.pattern,
        r.size_bytes >> 20,
        r.stride_bytes
    )
}

fn bandwidth(r: &BandwidthReport) -> String {
    let mut s = String::new();
    let square = r.cpu_nodes.len() > 1 || r.mem_nodes.len() > 1;
    if square && r.thread_counts.len() <= 1 {
        for info in &r.mixes {
            let cells: Vec<_> = r
                .cells
                .iter()
                .filter(|c| c.mix == info.mix)
                .map(|c| (c.cpu_node, c.mem_node, &c.outcome))
                .collect();
            let title = format!("Bandwidth, mix {}, median GB/s", info.mix);
            s += &Heatmap {
                title: &title,
                row_label: "CPU node",
                col_label: "memory node",
                rows: names(&r.cpu_nodes),
                cols: names(&r.mem_nodes),
                values: matrix(&r.cpu_nodes, &r.mem_nodes, &cells, |m| m.bandwidth_gb_s.median),
                unit: "GB/s",
                decimals: 1,
            }
            .render();
        }
    }
    let peaks = r.cells.iter().any(|c| c.efficiency.is_some());
    s += "<table><tr><th class=\"l\">mix</th><th>threads</th><th>CPU node</th><th>memory node</th><th>median GB/s</th><th>min</th><th>max</th><th>cv %</th>";
    if peaks {
        s += "<th>% of peak</th><th class=\"l\">peak</th>";
    }
    s += "</tr>";
    for c in &r.cells {
        s += &format!(
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td>",
            c.mix,
            c.cpus.len(),
            c.cpu_node,
            c.mem_node
        );
        s += &match c.outcome.ok() {
            Some(m) => {
                let b = &m.bandwidth_gb_s;
                format!(
                    "<td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.1}</td>",
                    b.median,
                    b.min,
                    b.max,
                    100.0 * b.cv
                )
            }
            None => "<td class=\"bad\" colspan=\"4\">no result</td>".to_string(),
        };
        if peaks {
            s += &match &c.efficiency {
                Some(e) => format!(
                    "<td>{:.1}</td><td class=\"l\"><span title=\"{}\">{:.1} GB/s</span></td>",
                    100.0 * e.fraction,
                    esc(&e.basis),
                    e.peak_gb_s
                ),
                None => "<td>-</td><td></td>".to_string(),
            };
        }
        s += "</tr>";
    }
    s += "</table>";
    s += &dram(r);
    for m in &r.mixes {
        s += &format!("<p class=\"meta\">{}: {}</p>", m.mix, esc(&m.byte_counting));
    }
    s
}

/// A cell's counted traffic as table cells: read, write and total GB, the program's
/// GB, and the ratio, read ratio and write ratio ("-" where not known).
pub fn dram_cells(d: &DramTraffic) -> [String; 7] {
    let gb = |b: Option<u64>| b.map_or("-".to_string(), |b| format!("{:.2}", b as f64 * 1e-9));
    let ratio = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    [
        gb(d.system.read_bytes),
        gb(d.system.write_bytes),
        gb(Some(d.system.total_bytes)),
        gb(Some(d.program_read_bytes + d.program_write_bytes)),
        ratio(d.ratio),
        ratio(d.read_ratio),
        ratio(d.write_ratio),
    ]
}

/// The memory controllers' count of each cell's traffic beside the program's bytes,
/// or why there is none.
fn dram(r: &BandwidthReport) -> String {
    let Some(source) = &r.dram_counting.source else {
        if r.dram_counting.reason.is_empty() {
            return String::new();
        }
        let reason = &r.dram_counting.reason;
        let reason = reason.strip_prefix("not counted: ").unwrap_or(reason);
        return format!("<p class=\"meta\">DRAM traffic not counted: {}</p>", esc(reason));
    };
    let mut s = format!(
        "<p>DRAM traffic over the timed samples, counted by {} (the whole machine's); ratio = counted / program bytes.</p>",
        esc(source)
    );
    s += "<table><tr><th class=\"l\">mix</th><th>threads</th><th>CPU node</th><th>memory node</th><th>read GB</th><th>write GB</th><th>total GB</th><th>program GB</th><th>ratio</th><th>read ratio</th><th>write ratio</th></tr>";
    for c in &r.cells {
        let Some(d) = c.outcome.ok().and_then(|m| m.dram.as_ref()) else {
            continue;
        };
        s += &format!(
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            c.mix,
            c.cpus.len(),
            c.cpu_node,
            c.mem_node,
            dram_cells(d).join("</td><td>")
        );
    }
    s + "</table>"
}

fn loaded(r: &LoadedLatencyReport) -> String {
    let points = r.curve();
    let title = format!("Latency of CPU {} under load (mix {})", r.latency_cpu, r.mix.mix);
    let mut series = vec![Series {
        name: format!("CPU {}", r.latency_cpu),
        points,
    }];
    if let Some(m) = r.idle.ok() {
        series.push(Series {
            name: "idle".into(),
            points: vec![(0.0, m.latency_ns.median)],
        });
    }
    LineChart {
        title: &title,
        x_label: "load GB/s",
        y_label: "latency ns",
        series,
        log2_x: false,
        marks: Vec::new(),
    }
    .render()
}

fn stream(r: &StreamReport) -> String {
    let Some(m) = r.outcome.ok() else {
        return "<p class=\"bad\">No result.</p>".into();
    };
    let mut s = String::from("<table><tr><th class=\"l\">function</th><th>best GB/s</th><th>median GB/s</th><th>bytes/element</th><th>% of peak</th></tr>");
    for f in &m.functions {
        s += &format!(
            "<tr><td class=\"l\">{}</td><td>{:.1}</td><td>{:.1}</td><td>{}</td><td>{}</td></tr>",
            esc(&f.name),
            f.best_gb_s,
            f.bandwidth_gb_s.median,
            f.bytes_per_element,
            f.efficiency
                .as_ref()
                .map_or("-".into(), |e| format!("{:.1}", 100.0 * e.fraction))
        );
    }
    s + &format!(
        "</table><p class=\"meta\">{} threads, {} elements per array, validation {}.</p>",
        r.cpus.len(),
        r.array_elements,
        if m.validation.passed { "passed" } else { "FAILED" }
    )
}

/// Vertical marks at the detected boundaries, labelled with the level they end.
fn marks(levels: Option<&SweepLevels>) -> Vec<(f64, String)> {
    levels
        .map(|l| {
            l.boundaries
                .iter()
                .map(|b| {
                    (
                        b.size_bytes as f64,
                        b.level.clone().unwrap_or_else(|| "step".into()),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn sweep(r: &SweepReport) -> String {
    let mut s = String::new();
    // The curves the levels were found in: the marks sit on their points.
    let numbers = |c: Vec<(u64, f64)>| c.into_iter().map(|(s, v)| (s as f64, v)).collect::<Vec<_>>();
    let lat = numbers(memfabric_model::latency_curve(&r.points));
    if !lat.is_empty() {
        s += &LineChart {
            title: "Latency vs working set",
            x_label: "working set",
            y_label: "ns per load",
            series: vec![Series {
                name: format!("CPU {}", r.cpu),
                points: lat,
            }],
            log2_x: true,
            marks: marks(r.latency_levels.as_ref()),
        }
        .render();
    }
    let bw = numbers(memfabric_model::bandwidth_curve(&r.points));
    if !bw.is_empty() {
        s += &LineChart {
            title: "Bandwidth vs working set",
            x_label: "working set per thread",
            y_label: "GB/s",
            series: vec![Series {
                name: "bandwidth".into(),
                points: bw,
            }],
            log2_x: true,
            marks: marks(r.bandwidth_levels.as_ref()),
        }
        .render();
    }
    let curves = [("Latency", &r.latency_levels), ("Bandwidth", &r.bandwidth_levels)];
    for (what, levels) in curves.into_iter().filter_map(|(w, l)| Some((w, l.as_ref()?))) {
        if levels.comparison.is_empty() {
            continue;
        }
        s += &format!(
            "<p class=\"meta\">{what} curve: each cache level's size as the topology reports it, and where the curve's boundary was found</p>"
        );
        s += "<table><tr><th class=\"l\">level</th><th>expected</th><th>detected</th><th>ratio</th></tr>";
        for c in &levels.comparison {
            s += &format!(
                "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&c.level),
                crate::svg::human(c.expected_bytes as f64),
                c.detected_bytes
                    .map_or("-".into(), |b| crate::svg::human(b as f64)),
                c.ratio.map_or("-".into(), |x| format!("{x:.2}"))
            );
        }
        s += "</table>";
    }
    s
}
