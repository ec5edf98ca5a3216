//! memfabric's analysis: what measured numbers mean, computed from the numbers and
//! the machine's description alone. Cache levels found in a curve (plateaus and
//! knees), theoretical peaks with their formulas, firmware (SLIT/HMAT) figures
//! beside measured ones, noise flags and their likely causes, and the memory
//! configuration audit.
//!
//! Nothing here reads a file, runs a process or touches hardware: every input is a
//! value (a topology, a report, the system state read by memfabric-topo), so every
//! rule is tested with planted inputs.

#![forbid(unsafe_code)]

pub mod audit;
pub mod caches;
pub mod firmware;
pub mod levels;
pub mod noise;
pub mod provision;
pub mod sweep_levels;
pub mod theory;
