//! Lists given on the command line.

/// Thread counts as given to --threads: 1,2,4 or ranges such as 1-4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Counts(pub Vec<usize>);

pub(super) fn parse_counts(s: &str) -> Result<Counts, String> {
    let v = memfabric_topo::parse_cpulist(s).map_err(|e| e.to_string())?;
    if v.is_empty() || v.contains(&0) {
        return Err("thread counts must be 1 or more".into());
    }
    Ok(Counts(v.into_iter().map(|n| n as usize).collect()))
}
