//! `memfabric theory`: what the machine (or a planned one) could do at most,
//! with the formula; and each bandwidth cell's share of that peak.

use std::path::Path;

use anyhow::Result;
use memfabric_analysis::theory::{self, Description, FILE_NAMES, FLAG_NAMES};
use memfabric_model::{format_size, MemoryPeak, Outcome, TheoryReport};
use memfabric_topo::{group_dimms, parse_dmidecode, read_memory_devices, MemoryDevices, Topology};
use serde::Serialize;

use crate::args::{MachineSource, TheoryArgs};
use crate::output::{print_all, Ctx, Status, Usage};
use crate::table::Table;

/// The JSON result: the report, and the DIMMs it was computed from.
#[derive(Serialize)]
struct TheoryResult<'a> {
    #[serde(flatten)]
    report: &'a TheoryReport,
    /// Null for a calculation or a machine file.
    memory_devices: Option<&'a MemoryDevices>,
}

pub fn run(ctx: &Ctx, a: &TheoryArgs) -> Result<Status> {
    let described = match (&a.machine, a.calculates()) {
        (Some(path), _) => {
            let valid = read_machine_file(path)?.validate(&FILE_NAMES);
            let named = |e: theory::TheoryError| Usage(format!("machine file {}: {e}", path.display()));
            Some(("machine-file", valid.map_err(named)))
        }
        (None, true) => Some((
            "calculator",
            flags(a).validate(&FLAG_NAMES).map_err(|e| Usage(e.to_string())),
        )),
        (None, false) => None,
    };
    if let Some((source, platform)) = described {
        if !a.source.is_live() {
            return Err(Usage("--sysfs, --smbios and --dmidecode read a machine; they do not combine with a calculation or --machine".into()).into());
        }
        let platform = platform?;
        let report = TheoryReport {
            source: source.into(),
            name: platform.name.clone(),
            memory: match &platform.memory {
                Some(d) => Outcome::Ok(theory::dram_peak(d)),
                None => Outcome::Skipped {
                    reason: "no memory described".into(),
                },
            },
            links: platform.links.as_ref().map(theory::link_peak),
        };
        return emit(ctx, None, &report, None);
    }
    let topo = read_topology(&a.source.sysfs)?;
    let devices = memory_devices(&topo, &a.source)?;
    let report = TheoryReport {
        source: devices.source.clone().unwrap_or_else(|| "smbios".into()),
        name: None,
        memory: theory::smbios_peak(&devices),
        links: None,
    };
    let topo = a.source.is_live().then_some(&topo);
    emit(ctx, topo, &report, Some(&devices))
}

fn emit(
    ctx: &Ctx,
    topo: Option<&Topology>,
    report: &TheoryReport,
    devices: Option<&MemoryDevices>,
) -> Result<Status> {
    if ctx.json {
        let result = TheoryResult {
            report,
            memory_devices: devices,
        };
        ctx.print_json("theory", topo, &result)?;
    } else {
        print_all(&render(report, devices))?;
    }
    Ok(Status::Ok)
}

fn flags(a: &TheoryArgs) -> Description {
    Description {
        name: None,
        sockets: a.sockets,
        channels_per_socket: a.channels,
        mts: a.mts,
        bus_bits: a.bus_bits,
        links: a.links,
        lanes: a.lanes,
        gbps: a.gbps,
    }
}

/// A machine file, its faults named with the file and line (exit 2).
pub fn read_machine_file(path: &Path) -> Result<Description> {
    let shown = path.display();
    let text =
        std::fs::read_to_string(path).map_err(|e| Usage(format!("cannot read machine file {shown}: {e}")))?;
    // A platform file (`platforms/*.toml`: rules for populations, NUMA modes and
    // links) describes choices, not one machine: it is plan's input.
    if let Ok(v) = text.parse::<toml::Table>() {
        if v.contains_key("match") && v.get("memory").is_some_and(|m| m.get("rule").is_some()) {
            return Err(Usage(format!(
                "{shown} is a platform file (rules and choices for `memfabric plan`), not a machine file: try `memfabric plan population --platform {shown}` or `plan numa --platform {shown}`"
            ))
            .into());
        }
    }
    parse_toml(&text, &format!("machine file {shown}")).map_err(|e| {
        if e.to_string().contains("unknown field `nps`") {
            Usage(format!(
                "{e} (NUMA modes are planned with `memfabric plan numa --nps N`)"
            ))
            .into()
        } else {
            e
        }
    })
}

/// TOML text as a `T`; a fault is bad input (exit 2), named as `what:` with
/// the line and the first line of the parser's message.
pub fn parse_toml<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<T> {
    toml::from_str::<T>(text).map_err(|e| {
        let message = e
            .message()
            .lines()
            .next()
            .unwrap_or("not valid TOML")
            .trim()
            .to_string();
        let at = error_line(text, e.span(), &message).map_or(String::new(), |l| format!(" line {l}:"));
        Usage(format!("{what}:{at} {message}")).into()
    })
}

/// The line a TOML error is about: its span's, unless the span is the whole
/// table (as for an unknown key), then the line of the key it names.
fn error_line(text: &str, span: Option<std::ops::Range<usize>>, message: &str) -> Option<usize> {
    let line_of = |at: usize| text[..at.min(text.len())].lines().count().max(1);
    if let Some(s) = span.filter(|s| !text.get(s.clone()).unwrap_or("").contains('\n')) {
        return Some(line_of(s.start) + usize::from(text[..s.start.min(text.len())].ends_with('\n')));
    }
    let key = message.strip_prefix("unknown field `")?.split('`').next()?;
    let names_key = |line: &str| {
        let rest = line.trim_start().strip_prefix(key);
        rest.is_some_and(|r| r.trim_start().starts_with('='))
    };
    Some(text.lines().position(names_key)? + 1)
}

/// The topology at `sysfs`; a tree the user pointed at is input (exit 2).
pub fn read_topology(sysfs: &Path) -> Result<Topology> {
    Topology::read(sysfs).map_err(|e| {
        if memfabric_topo::Roots::is_live_sys(sysfs) {
            anyhow::Error::new(e).context(format!("reading the topology from {}", sysfs.display()))
        } else {
            Usage(format!("{}: {e}", sysfs.display())).into()
        }
    })
}

/// The memory devices the source options name: a saved `dmidecode -t 17`
/// text, a saved entries directory, or what the topology read; on the live
/// machine, `dmidecode -t 17` where the raw entries could not be read.
pub fn memory_devices(topo: &Topology, src: &MachineSource) -> Result<MemoryDevices> {
    let mut devices = if let Some(file) = &src.dmidecode {
        let text = std::fs::read_to_string(file)
            .map_err(|e| Usage(format!("cannot read dmidecode output {}: {e}", file.display())))?;
        parse_dmidecode(&text)
    } else if let Some(dir) = &src.smbios {
        if !dir.is_dir() {
            return Err(Usage(format!("--smbios {}: not a directory", dir.display())).into());
        }
        read_memory_devices(dir)
    } else if src.is_live() {
        return Ok(memfabric_topo::live_memory_devices(topo));
    } else {
        return Ok(topo.memory_devices.clone());
    };
    group_dimms(&mut devices.dimms, topo.packages.len());
    Ok(devices)
}

pub fn render(r: &TheoryReport, devices: Option<&MemoryDevices>) -> String {
    let mut out = String::from(
        "Theoretical peak bandwidth (GB/s = 10^9 bytes/s; raw transfer rate, before refresh, command and protocol overhead)\n",
    );
    if let Some(name) = &r.name {
        out += &format!("Platform: {name}\n");
    }
    match &r.memory {
        Outcome::Ok(m) => out += &memory_table(m, &r.source),
        Outcome::Skipped { reason } | Outcome::Failed { reason } => {
            if r.links.is_none() || r.source != "calculator" && r.source != "machine-file" {
                out += &format!("\nMemory: skipped: {reason}\n");
                if devices.is_some() {
                    out += "  nothing is guessed; give --channels N --mts N (a calculation) or --machine FILE (a description)\n";
                }
            }
        }
    }
    if let Some(l) = &r.links {
        out += &format!("\nSocket links: {}\n", l.formula);
    }
    if let Some(d) = devices.filter(|d| !d.dimms.is_empty()) {
        out += &dimm_table(d);
    }
    out
}

fn memory_table(m: &MemoryPeak, source: &str) -> String {
    let from = match source {
        "smbios" => "the DIMMs, SMBIOS type 17",
        "dmidecode" => "the DIMMs, dmidecode -t 17",
        "machine-file" => "machine file",
        _ => "calculation",
    };
    let mut t = Table::new(&["<socket", "channels", "MT/s", "bus bits", "GB/s", "<formula"]);
    let opt = |v: Option<u32>| v.map_or("mixed".to_string(), |v| v.to_string());
    for s in &m.sockets {
        let channels = if s.populated_channels == s.listed_channels {
            s.listed_channels.to_string()
        } else {
            format!("{} of {}", s.populated_channels, s.listed_channels)
        };
        t.row(vec![
            s.socket.to_string(),
            channels,
            opt(s.mt_s),
            opt(s.bus_bits),
            theory::num(s.peak_gb_s),
            s.formula.clone(),
        ]);
    }
    let blank = String::new;
    t.row(vec![
        "system".into(),
        blank(),
        blank(),
        blank(),
        theory::num(m.system_gb_s),
        m.formula.clone(),
    ]);
    let mut out = format!("\nMemory ({from})\n{}", t.render());
    for s in &m.sockets {
        for c in s.channels.iter().filter(|c| c.note.is_some()) {
            out += &format!(
                "  socket {} channel {}: {}\n",
                s.socket,
                c.channel,
                c.note.as_deref().unwrap_or("")
            );
        }
    }
    out
}

fn dimm_table(d: &MemoryDevices) -> String {
    let installed = d.dimms.iter().filter(|x| x.installed).count();
    let mut t = Table::new(&[
        "<locator",
        "<bank",
        "socket",
        "channel",
        "size",
        "<type",
        "rated MT/s",
        "running MT/s",
        "ranks",
        "bits",
        "<manufacturer",
        "<part",
    ]);
    let o = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    for x in &d.dimms {
        let size = if x.installed {
            x.size_bytes.map(format_size)
        } else {
            Some("empty".into())
        };
        t.row(vec![
            o(x.locator.clone()),
            o(x.bank_locator.clone()),
            o(x.socket.map(|s| s.to_string())),
            o(x.channel.clone()),
            o(size),
            o(x.memory_type.clone()),
            o(x.speed_mt_s.map(|s| s.to_string())),
            o(x.configured_speed_mt_s.map(|s| s.to_string())),
            o(x.ranks.map(|r| r.to_string())),
            o(x.data_width_bits.map(|w| match x.total_width_bits {
                Some(t) if t != w => format!("{w}/{t}"),
                _ => w.to_string(),
            })),
            o(x.manufacturer.clone()),
            o(x.part_number.clone()),
        ]);
    }
    let source = d.source.as_deref().unwrap_or("smbios");
    let slots = d.dimms.len();
    let plural = if slots == 1 { "" } else { "s" };
    let mut out = format!(
        "\nMemory devices ({source}, type 17: {slots} slot{plural}, {installed} installed; bits: data/total)\n{}",
        t.render()
    );
    for p in &d.problems {
        out += &format!("  not decoded: {p}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use memfabric_analysis::theory::{dram_peak, link_peak, DramSpec, LinkSpec};

    fn fixture_devices(name: &str, packages: usize) -> MemoryDevices {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/smbios")
            .join(name);
        let mut d = read_memory_devices(&dir);
        group_dimms(&mut d.dimms, packages);
        d
    }

    #[test]
    fn calculator_table() {
        let report = TheoryReport {
            source: "calculator".into(),
            name: None,
            memory: Outcome::Ok(dram_peak(&DramSpec {
                sockets: 2,
                channels: 12,
                mt_s: 4800,
                bus_bits: 64,
            })),
            links: Some(link_peak(&LinkSpec {
                links: 4,
                lanes: 16,
                gbps: 32.0,
            })),
        };
        insta::assert_snapshot!(render(&report, None));
    }

    #[test]
    fn smbios_mixed_table() {
        let devices = fixture_devices("ddr4-2s-mixed", 2);
        let report = TheoryReport {
            source: "smbios".into(),
            name: None,
            memory: theory::smbios_peak(&devices),
            links: None,
        };
        insta::assert_snapshot!(render(&report, Some(&devices)));
    }

    #[test]
    fn smbios_that_says_too_little() {
        let devices = fixture_devices("qemu-default", 2);
        let report = TheoryReport {
            source: "smbios".into(),
            name: None,
            memory: theory::smbios_peak(&devices),
            links: None,
        };
        insta::assert_snapshot!(render(&report, Some(&devices)));
    }
}
