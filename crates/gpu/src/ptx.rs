//! The kernels, shipped inside the binary as PTX generated from kernels/*.cu by
//! kernels/build-ptx.sh. The driver compiles the PTX for the GPU at load time.

/// One PTX file: its text and the kernels memfabric launches from it.
#[derive(Debug, Clone, Copy)]
pub struct PtxFile {
    pub name: &'static str,
    pub text: &'static str,
    pub kernels: &'static [&'static str],
}

pub const STREAM: PtxFile = PtxFile {
    name: "stream",
    text: include_str!("../ptx/stream.ptx"),
    kernels: &["mf_read", "mf_write", "mf_copy", "mf_triad", "mf_hold"],
};

pub const CHASE: PtxFile = PtxFile {
    name: "chase",
    text: include_str!("../ptx/chase.ptx"),
    kernels: &["mf_chase"],
};

pub const ALL: [PtxFile; 2] = [STREAM, CHASE];

impl PtxFile {
    /// The source hash written in the header by build-ptx.sh.
    pub fn source_hash(&self) -> Option<&'static str> {
        self.text
            .lines()
            .find_map(|l| l.strip_prefix("// source fnv1a64: "))
            .map(str::trim)
    }

    /// Whether the PTX defines `kernel` as an entry point.
    pub fn has_entry(&self, kernel: &str) -> bool {
        self.text
            .lines()
            .any(|l| l.trim_start().starts_with(".visible .entry") && l.contains(&format!(" {kernel}(")))
    }

    /// The ".version" line's PTX ISA version, e.g. "8.0".
    pub fn isa_version(&self) -> Option<&'static str> {
        self.text
            .lines()
            .find_map(|l| l.strip_prefix(".version "))
            .map(str::trim)
    }
}

/// FNV-1a, 64 bits: the hash build-ptx.sh writes, to tell a stale PTX from its source.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_launched_is_in_its_ptx() {
        for f in ALL {
            for k in f.kernels {
                assert!(f.has_entry(k), "{}.ptx has no entry {k}", f.name);
            }
            assert_eq!(
                f.isa_version(),
                Some("8.0"),
                "{}: loadable by any CUDA 12 driver",
                f.name
            );
            assert!(
                f.text.contains(".target sm_70"),
                "{}: compiled for compute_70",
                f.name
            );
        }
    }

    #[test]
    fn ptx_is_generated_from_the_sources_in_the_repository() {
        for f in ALL {
            let path = format!("{}/kernels/{}.cu", env!("CARGO_MANIFEST_DIR"), f.name);
            let src = std::fs::read(&path).unwrap();
            assert_eq!(
                f.source_hash(),
                Some(format!("{:016x}", fnv1a64(&src)).as_str()),
                "{path} changed since ptx/{}.ptx was generated: run crates/gpu/kernels/build-ptx.sh",
                f.name
            );
        }
    }

    #[test]
    fn fnv1a64_matches_the_reference_values() {
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }
}
