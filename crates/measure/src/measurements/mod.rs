//! One file per CPU measurement, each a [`crate::Measurement`]: how it runs its
//! plan (placement, kernels, timing, validation) and how its report is enriched.
//! Their plans are in `crate::plan`, their kernels in `crate::kernels`.

pub mod bandwidth;
pub mod c2c;
pub mod concurrent;
pub mod domains;
pub mod latency;
pub mod loaded;
pub mod monitor;
pub mod stream;
pub mod sweep;
