//! The kernels that are the measurement: the dependent pointer chase, the vector
//! loops of every bandwidth mix (AVX-512/AVX2/SSE2/NEON chosen at run time), cache
//! line flushes and the core-to-core ping-pong. They work on buffers `crate::sys`
//! maps and places; with it, this is the only module that may use `unsafe` code,
//! each block with a `// SAFETY:` note.

mod chase;
pub mod flush;
mod pingpong;
mod streams;
mod vector;

pub use chase::{chase, chase_count_cycle, link_chase, Chain, LINE};
pub use pingpong::{Line, LinePage, Pinger};
pub use streams::{as_doubles, run_pass, run_pass_range, Op, Pass, ARRAY_ALIGN, BLOCK_ELEMENTS};
pub use vector::Isa;
