use super::*;

fn plan(memories: Vec<HostMemory>, engines: Vec<CopyEngine>, directions: Vec<CopyDirection>) -> GpuCopyPlan {
    GpuCopyPlan {
        size_bytes: 64 << 20,
        samples: 3,
        nodes: vec![0, 1],
        memories,
        engines,
        directions,
        huge_pages: HugePages::Off,
    }
}

fn placement(on: u64, elsewhere: Vec<NodePages>) -> Placement {
    let total = on + elsewhere.iter().map(|np| np.pages).sum::<u64>();
    Placement {
        requested_node: 1,
        page_size_bytes: 4096,
        pages_total: total,
        pages_sampled: total,
        pages_on_node: on,
        verified: elsewhere.is_empty(),
        pages_elsewhere: elsewhere,
        thread_affinity: vec![0, 1],
        method: "move_pages".into(),
        interleave: None,
    }
}

#[test]
fn cells_are_ordered_by_memory_node_engine_direction() {
    use CopyDirection::{Bidirectional as Both, HostToDevice as H2d};
    use HostMemory::*;
    let (ce, sm) = (CopyEngine::CopyEngine, CopyEngine::Sm);
    let p = plan(vec![Pageable, Pinned, PinnedNode], vec![ce, sm], vec![H2d, Both]);
    let got: Vec<(HostMemory, Option<u32>, CopyEngine, CopyDirection)> = cells(&p)
        .iter()
        .map(|c| (c.memory, c.node, c.engine, c.direction))
        .collect();
    let mut want = vec![(Pageable, None, ce, H2d), (Pageable, None, ce, Both)];
    for (m, n) in [(Pinned, None), (PinnedNode, Some(0)), (PinnedNode, Some(1))] {
        for e in [ce, sm] {
            for d in [H2d, Both] {
                want.push((m, n, e, d));
            }
        }
    }
    assert_eq!(got, want);
}

#[test]
fn pageable_memory_has_no_sm_cells_and_no_nodes_no_pinned_node_cells() {
    let mut p = plan(
        vec![HostMemory::Pageable, HostMemory::PinnedNode],
        vec![CopyEngine::Sm],
        vec![CopyDirection::DeviceToHost],
    );
    assert_eq!(cells(&p).len(), 2, "one SM cell per node");
    p.nodes.clear();
    assert!(cells(&p).is_empty());
    assert_eq!(groups(&p), vec![(HostMemory::Pageable, None)]);
}

#[test]
fn both_directions_are_counted() {
    use CopyDirection::*;
    let size = (1 << 20) + 3;
    let (ce, sm) = (CopyEngine::CopyEngine, CopyEngine::Sm);
    let got = [
        (ce, HostToDevice),
        (ce, Bidirectional),
        (sm, DeviceToHost),
        (sm, Bidirectional),
    ]
    .map(|(e, d)| bytes_per_sample(e, d, size));
    assert_eq!(got, [size, 2 * size, 1 << 20, 2 << 20], "SM copies whole doubles");
}

#[test]
fn both_sm_kernels_of_a_bidirectional_copy_fit_at_once() {
    let full = grid_blocks(1 << 28, 114, BLOCK_THREADS);
    assert_eq!(sm_grid(full, CopyDirection::HostToDevice), 114 * 8);
    assert_eq!(sm_grid(full, CopyDirection::Bidirectional), 114 * 4);
    assert_eq!(sm_grid(1, CopyDirection::Bidirectional), 1);
}

#[test]
fn merged_placement_is_verified_only_if_both_are() {
    let good = placement(8, vec![]);
    let m = merge(&good, &good);
    assert!(m.verified);
    assert_eq!((m.pages_total, m.pages_on_node), (16, 16));
    assert_eq!(m.method, "each of two buffers: move_pages");
    let bad = placement(
        5,
        vec![NodePages { node: 0, pages: 2 }, NodePages { node: -14, pages: 1 }],
    );
    let m = merge(&bad, &placement(7, vec![NodePages { node: 0, pages: 1 }]));
    assert!(!m.verified);
    assert_eq!(m.pages_on_node, 12);
    assert_eq!(
        m.pages_elsewhere,
        vec![NodePages { node: -14, pages: 1 }, NodePages { node: 0, pages: 3 }]
    );
    assert!(describe_mismatch(&m).contains("3 on node 0"));
}

/// Needs an NVIDIA GPU: cargo test -p memfabric-gpu -- --ignored
#[test]
#[ignore]
fn copies_on_a_real_gpu() {
    use CopyDirection::*;
    let gpu = Gpu::open(0, &memfabric_topo::Roots::live().sys).expect("a GPU");
    let mut p = plan(
        vec![HostMemory::Pageable, HostMemory::Pinned, HostMemory::PinnedNode],
        vec![CopyEngine::CopyEngine, CopyEngine::Sm],
        vec![HostToDevice, DeviceToHost, Bidirectional],
    );
    p.nodes = vec![0];
    let Outcome::Ok(cells) = measure(&gpu, &p, &memfabric_measure::Silent).unwrap() else {
        panic!("not measured");
    };
    assert_eq!(cells.len(), 15);
    for c in &cells {
        let Outcome::Ok(m) = &c.outcome else {
            panic!("{c:?}");
        };
        assert!(
            m.bandwidth_gb_s.median > 1.0 && m.bandwidth_gb_s.median < 200.0,
            "{c:?}"
        );
        assert_eq!(m.placement.is_some(), c.memory == HostMemory::PinnedNode);
    }
}
