//! `--interleave`: memory spread over several nodes, resolved and checked against the
//! machine like any other memory selection.

use memfabric_model::{HugePages, Interleave};

use crate::plan::{Machine, PlanError, Selection};

/// `--interleave NODES|all` and `--interleave-weights`, syntax checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InterleaveAsk {
    /// None: every node with memory (`all`).
    pub nodes: Option<Vec<u32>>,
    /// One per node, in the order of the nodes; None: even shares.
    pub weights: Option<Vec<u32>>,
}

impl Machine<'_> {
    /// The interleave the selection asks for, each node checked: it exists, has
    /// memory, appears once; weights, if given, one per node and at least 1.
    pub fn interleave(&self, sel: &Selection) -> Result<Option<Interleave>, PlanError> {
        let Some(ask) = &sel.interleave else {
            return Ok(None);
        };
        let nodes = match &ask.nodes {
            Some(list) => list.clone(),
            None => self.topo.memory_nodes(),
        };
        if nodes.is_empty() {
            return Err(PlanError::BadValue("--interleave needs at least one node".into()));
        }
        for (i, &n) in nodes.iter().enumerate() {
            if nodes[..i].contains(&n) {
                return Err(PlanError::BadValue(format!("--interleave names node {n} twice")));
            }
            self.check_mem_node(n)?;
        }
        let weights = match &ask.weights {
            None => vec![1; nodes.len()],
            Some(w) if w.len() != nodes.len() => {
                return Err(PlanError::BadValue(format!(
                    "--interleave-weights gives {} weights for {} nodes ({}): give one per node, in the same order",
                    w.len(),
                    nodes.len(),
                    list(&nodes)
                )))
            }
            Some(w) if w.contains(&0) => {
                return Err(PlanError::BadValue(
                    "--interleave-weights must each be at least 1 (leave a node out of --interleave instead)".into(),
                ))
            }
            Some(w) => w.clone(),
        };
        Ok(Some(Interleave { nodes, weights }))
    }

    /// Checks that `bytes` fit where the selection puts them: on each memory node,
    /// or spread over the interleave set by its shares.
    pub(crate) fn check_spread_fits(
        &self,
        interleave: Option<&Interleave>,
        mem_nodes: &[u32],
        bytes: u64,
        huge: HugePages,
    ) -> Result<(), PlanError> {
        match interleave {
            None => mem_nodes
                .iter()
                .try_for_each(|&n| self.check_fits(n, bytes, huge)),
            Some(i) => i.nodes.iter().zip(i.expected_pct()).try_for_each(|(&n, pct)| {
                self.check_fits(n, (bytes as f64 * pct / 100.0).ceil() as u64, huge)
            }),
        }
    }
}

/// Refuses `--interleave` beside the options it replaces.
pub(crate) fn check_alone(sel: &Selection) -> Result<(), PlanError> {
    if sel.interleave.is_some() && (sel.mem_nodes.is_some() || sel.matrix) {
        return Err(PlanError::Conflict(
            "--interleave replaces --mem-nodes and --matrix: the memory is the interleave set".into(),
        ));
    }
    Ok(())
}

fn list(nodes: &[u32]) -> String {
    nodes.iter().map(u32::to_string).collect::<Vec<_>>().join(",")
}
