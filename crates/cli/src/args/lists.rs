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

/// A count, a time or a percentage that must be above 0: `--samples -3` and
/// `--sample-ms 0` are refused with what the value must be, not with clap's
/// "unexpected argument '-3'".
pub fn positive<T>(s: &str) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + Default,
{
    match s.trim().parse::<T>() {
        Ok(v) if v > T::default() => Ok(v),
        _ => Err(format!("must be a number above 0, not {s}")),
    }
}
