//! `--interleave` and `--interleave-weights`, shared by latency, bandwidth and stream.
//! Taken as text and read by `cmd::common::interleave`, so that a bad list is refused
//! in one line, like every other value resolved against the machine.

use clap::Args;

#[derive(Debug, Args, Default)]
pub struct InterleaveArgs {
    /// Spread the memory over these nodes, page by page (MPOL_INTERLEAVE), or over all of them: what a BIOS "memory interleave" / NPS0 setting gives the whole machine (replaces --mem-nodes and --matrix)
    #[arg(long, value_name = "NODES|all")]
    pub interleave: Option<String>,
    /// With --interleave: pages per node per turn, one weight per node in the same order (3,1: three quarters on the first node); placed as runs of blocks bound to each node in turn
    #[arg(long, value_name = "LIST", requires = "interleave")]
    pub interleave_weights: Option<String>,
}

/// `bandwidth --concurrent`: which streams run at the same time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ConcurrentArg {
    /// Two nodes read each other's memory at once (0->1 and 1->0)
    Pairs,
    /// Every CPU node reads the next node with memory, all at once
    AllRemote,
    /// Every CPU node reads its own memory, all at once
    AllLocal,
}

impl From<ConcurrentArg> for memfabric_model::ConcurrentPattern {
    fn from(a: ConcurrentArg) -> Self {
        match a {
            ConcurrentArg::Pairs => memfabric_model::ConcurrentPattern::Pairs,
            ConcurrentArg::AllRemote => memfabric_model::ConcurrentPattern::AllRemote,
            ConcurrentArg::AllLocal => memfabric_model::ConcurrentPattern::AllLocal,
        }
    }
}
