//! File access under the sysfs root, turning I/O and format problems into
//! [`TopoError`]s that name the file.

use std::io::ErrorKind;
use std::path::Path;

use crate::cpulist::parse_cpulist;
use crate::error::TopoError;
use crate::parse::numbered_name;

/// Reads a file the kernel always provides; its absence is an error.
pub fn read_required(path: &Path) -> Result<String, TopoError> {
    std::fs::read_to_string(path).map_err(|source| TopoError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads a file that depends on kernel version, configuration, firmware or
/// privilege. Absent and unreadable-for-permission both mean "not known"
/// rather than failure, so an unprivileged run still gets a topology.
pub fn read_optional(path: &Path) -> Result<Option<String>, TopoError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied) => Ok(None),
        Err(source) => Err(TopoError::Io {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Applies a pure parser to a file's text, naming the file in the error.
pub fn parse_with<T>(
    path: &Path,
    text: &str,
    parser: impl FnOnce(&str) -> Result<T, String>,
) -> Result<T, TopoError> {
    parser(text).map_err(|reason| TopoError::format(path, reason))
}

/// Reads a required file and applies `parser` to it.
pub fn read_parsed<T>(path: &Path, parser: impl FnOnce(&str) -> Result<T, String>) -> Result<T, TopoError> {
    let text = read_required(path)?;
    parse_with(path, &text, parser)
}

/// Reads an optional file and applies `parser` to it when present.
pub fn read_parsed_optional<T>(
    path: &Path,
    parser: impl FnOnce(&str) -> Result<T, String>,
) -> Result<Option<T>, TopoError> {
    match read_optional(path)? {
        Some(text) => parse_with(path, &text, parser).map(Some),
        None => Ok(None),
    }
}

/// Reads a required CPU or node list file.
pub fn read_list(path: &Path) -> Result<Vec<u32>, TopoError> {
    let text = read_required(path)?;
    parse_cpulist(&text).map_err(|source| TopoError::List {
        path: path.to_path_buf(),
        source,
    })
}

/// Reads an optional CPU or node list file.
pub fn read_list_optional(path: &Path) -> Result<Option<Vec<u32>>, TopoError> {
    match read_optional(path)? {
        Some(text) => parse_cpulist(&text).map(Some).map_err(|source| TopoError::List {
            path: path.to_path_buf(),
            source,
        }),
        None => Ok(None),
    }
}

/// Names of the entries of a directory, sorted; an absent directory has
/// none, since every directory this crate lists is optional somewhere.
pub fn entry_names(dir: &Path) -> Result<Vec<String>, TopoError> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if matches!(e.kind(), ErrorKind::NotFound | ErrorKind::PermissionDenied) => {
            return Ok(Vec::new())
        }
        Err(source) => {
            return Err(TopoError::Io {
                path: dir.to_path_buf(),
                source,
            })
        }
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| TopoError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        // Non-UTF-8 names cannot be any of the kernel's entries.
        if let Ok(name) = entry.file_name().into_string() {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Numbers of the entries named `<prefix><N>` in a directory, sorted.
pub fn numbered_entries(dir: &Path, prefix: &str) -> Result<Vec<u32>, TopoError> {
    let mut ids: Vec<u32> = entry_names(dir)?
        .iter()
        .filter_map(|name| numbered_name(name, prefix))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_files_and_dirs() {
        let dir = std::env::temp_dir().join("memfabric-topo-sysfs-missing");
        let _ = std::fs::remove_dir_all(&dir);
        assert!(read_optional(&dir.join("x")).unwrap().is_none());
        assert!(entry_names(&dir).unwrap().is_empty());
        let err = read_required(&dir.join("x")).unwrap_err().to_string();
        assert!(err.contains("memfabric-topo-sysfs-missing"), "{err}");
    }

    #[test]
    fn numbered_entries_skip_other_names() {
        let dir = std::env::temp_dir().join(format!("memfabric-topo-sysfs-{}", std::process::id()));
        for name in ["cpu10", "cpu2", "cpufreq", "cpuidle", "online"] {
            std::fs::create_dir_all(dir.join(name)).unwrap();
        }
        assert_eq!(numbered_entries(&dir, "cpu").unwrap(), vec![2, 10]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parse_errors_name_the_file() {
        let err = parse_with(Path::new("/x/size"), "zz", |_| Err::<u8, _>("bad".into()));
        assert_eq!(err.unwrap_err().to_string(), "/x/size: bad");
    }
}
