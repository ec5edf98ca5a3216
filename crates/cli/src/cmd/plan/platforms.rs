//! The platform files: built in (platforms/ in the source, compiled in), in
//! the directory $MEMFABRIC_PLATFORMS, or named by path.

use std::path::{Path, PathBuf};

use anyhow::Result;
use memfabric_analysis::provision::{Platform, ProvisionError};
use serde::Serialize;

use crate::cmd::theory::parse_toml;
use crate::output::{print_all, Ctx, Status, Usage};
use crate::table::Table;

const BUILTIN: [(&str, &str); 7] = [
    (
        "apu-lpddr5x-256",
        include_str!("../../../../../platforms/apu-lpddr5x-256.toml"),
    ),
    (
        "epyc-7002-2s",
        include_str!("../../../../../platforms/epyc-7002-2s.toml"),
    ),
    (
        "epyc-9004-2s",
        include_str!("../../../../../platforms/epyc-9004-2s.toml"),
    ),
    (
        "grace-superchip",
        include_str!("../../../../../platforms/grace-superchip.toml"),
    ),
    (
        "xeon-7500-4s",
        include_str!("../../../../../platforms/xeon-7500-4s.toml"),
    ),
    (
        "xeon-sp-2s",
        include_str!("../../../../../platforms/xeon-sp-2s.toml"),
    ),
    (
        "xeon-spr-2s",
        include_str!("../../../../../platforms/xeon-spr-2s.toml"),
    ),
];

/// A platform and where it was read.
#[derive(Debug, Clone, Serialize)]
pub struct Loaded {
    pub id: String,
    /// "built in" or the file's path.
    pub origin: String,
    pub platform: Platform,
}

fn user_dir() -> Option<PathBuf> {
    std::env::var_os("MEMFABRIC_PLATFORMS").map(PathBuf::from)
}

fn parse(text: &str, id: &str, origin: String) -> Result<Loaded> {
    let what = format!("platform file {origin}");
    let platform: Platform = parse_toml(text, &what)?;
    platform.validate().map_err(|e| {
        let at = match &e {
            ProvisionError::Platform { key, .. } => {
                line_of(text, key).map_or(String::new(), |l| format!(" line {l}:"))
            }
            ProvisionError::Ask(_) => String::new(),
        };
        Usage(format!("{what}:{at} {e}"))
    })?;
    Ok(Loaded {
        id: id.into(),
        origin,
        platform,
    })
}

/// The line that sets `key` (`key = ...`) or opens `[key]`, 1-based.
fn line_of(text: &str, key: &str) -> Option<usize> {
    let sets = |l: &str| {
        let l = l.trim_start();
        if key.starts_with('[') {
            return l.starts_with(key);
        }
        l.strip_prefix(key)
            .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    text.lines().position(sets).map(|i| i + 1)
}

fn read(path: &Path) -> Result<Loaded> {
    let shown = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| Usage(format!("cannot read platform file {shown}: {e}")))?;
    let id = path
        .file_stem()
        .map_or(shown.clone(), |s| s.to_string_lossy().into_owned());
    parse(&text, &id, shown)
}

/// `--platform P`: a path (with a '/' or ending in .toml), a file in
/// $MEMFABRIC_PLATFORMS (which wins over a built-in of the same name), or a
/// built-in name.
pub fn load(spec: &str) -> Result<Loaded> {
    if spec.contains('/') || spec.ends_with(".toml") {
        return read(Path::new(spec));
    }
    if let Some(file) = user_dir()
        .map(|d| d.join(format!("{spec}.toml")))
        .filter(|f| f.is_file())
    {
        return read(&file);
    }
    match BUILTIN.iter().find(|(id, _)| *id == spec) {
        Some((id, text)) => parse(text, id, "built in".into()),
        None => Err(Usage(format!(
            "unknown platform {spec}: known are {} (`memfabric plan platforms`), or give a file: --platform path/to/file.toml",
            ids().join(", ")
        ))
        .into()),
    }
}

fn ids() -> Vec<String> {
    let mut v: Vec<String> = BUILTIN.iter().map(|(id, _)| id.to_string()).collect();
    v.extend(
        user_files()
            .into_iter()
            .filter_map(|p| Some(p.file_stem()?.to_string_lossy().into_owned())),
    );
    v.sort();
    v.dedup();
    v
}

fn user_files() -> Vec<PathBuf> {
    let Some(dir) = user_dir() else { return vec![] };
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "toml"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

/// Every platform known here; a user file that does not read is an error.
pub fn all() -> Result<Vec<Loaded>> {
    let mut out = vec![];
    for (id, text) in BUILTIN {
        out.push(parse(text, id, "built in".into())?);
    }
    for f in user_files() {
        let l = read(&f)?;
        out.retain(|o| o.id != l.id);
        out.push(l);
    }
    Ok(out)
}

/// The platform whose `match` names this CPU model.
pub fn matching(cpu_model: &str) -> Result<Option<Loaded>> {
    Ok(all()?.into_iter().find(|l| {
        l.platform
            .cpu_match
            .iter()
            .any(|m| cpu_model.contains(m.as_str()))
    }))
}

pub fn list(ctx: &Ctx) -> Result<Status> {
    let all = all()?;
    if ctx.json {
        ctx.print_json("plan-platforms", None, &all)?;
        return Ok(Status::Ok);
    }
    let mut t = Table::new(&[
        "<platform",
        "sockets",
        "<memory",
        "<NUMA modes",
        "<links",
        "<RAS",
        "<from",
    ]);
    for l in &all {
        let p = &l.platform;
        let m = &p.memory;
        let modes: Vec<String> = p
            .numa
            .nodes_per_socket
            .iter()
            .map(|&n| p.numa.mode_name(n))
            .collect();
        let links = p.links.as_ref().map_or("-".into(), |k| {
            let counts: Vec<String> = k.counts.iter().map(u32::to_string).collect();
            format!("{} {}", counts.join("/"), k.kind)
        });
        let ras: Vec<&str> = std::iter::once("none")
            .chain(p.ras.keys().map(String::as_str))
            .collect();
        t.row(vec![
            l.id.clone(),
            p.sockets.to_string(),
            format!(
                "{} x {} {}-{}",
                m.channels_per_socket, m.bus_bits, m.kind, m.mts[0]
            ),
            modes.join(" "),
            links,
            ras.join(" "),
            l.origin.clone(),
        ]);
    }
    let dir = user_dir().map_or("unset".into(), |d| d.display().to_string());
    print_all(&format!(
        "{}\nYour own: a file by path (--platform my.toml), or NAME.toml in $MEMFABRIC_PLATFORMS (now: {dir}).\nEach file cites its sources; `memfabric plan population --platform NAME --capacity 1TiB --explain` prints them.\n",
        t.render()
    ))?;
    Ok(Status::Ok)
}
