//! Plans of memory spread over nodes (`--interleave`), streams run at once
//! (`bandwidth --concurrent`) and load from chosen nodes (`loaded-latency
//! --load-nodes`), resolved against a two-socket, eight-node fixture.

mod common;

use memfabric_measure::kernels::Isa;
use memfabric_measure::plan::concurrent::{concurrent_plan, ConcurrentOptions};
use memfabric_measure::plan::loaded::loaded_plan;
use memfabric_measure::plan::{
    bandwidth_plan, domain_plan, latency_plan, stream_plan, DomainOptions, InterleaveAsk, PlanError,
    Selection, StreamOptions,
};
use memfabric_model::{ConcurrentPattern, HugePages, Mix};

use common::{bw, fixture, lat, loaded, machine};

fn spread(nodes: Option<Vec<u32>>, weights: Option<Vec<u32>>) -> Selection {
    Selection {
        interleave: Some(InterleaveAsk { nodes, weights }),
        ..Selection::default()
    }
}

#[test]
fn interleave_all_is_every_memory_node_against_each_cpu_node() {
    let t = fixture("epyc7601-2s");
    let m = machine(&t);
    let p = latency_plan(&m, &spread(None, None), &lat(Some(64 << 20), HugePages::Off)).unwrap();
    let i = p.interleave.expect("interleave");
    assert_eq!(i.nodes, (0..8).collect::<Vec<_>>());
    assert!(i.is_even());
    assert_eq!(p.mem_nodes, [0], "one column, labelled by the set's first node");
    assert_eq!(p.cells.len(), 8);
    let b = bandwidth_plan(&m, &spread(Some(vec![4, 0]), Some(vec![3, 1])), &bw(Some(2))).unwrap();
    let i = b.interleave.expect("interleave");
    assert_eq!(
        (i.nodes, i.weights),
        (vec![4, 0], vec![3, 1]),
        "order given, weights by position"
    );
    assert!(b.cells.iter().all(|c| c.mem_node == 4));
}

#[test]
fn bad_interleaves_are_refused_in_one_line() {
    let t = fixture("epyc7601-2s");
    let m = machine(&t);
    let l = lat(Some(64 << 20), HugePages::Off);
    let err = |sel: Selection| latency_plan(&m, &sel, &l).unwrap_err();
    assert_eq!(
        err(spread(Some(vec![0, 9]), None)),
        PlanError::UnknownNode {
            node: 9,
            known: "0-7".into()
        }
    );
    assert!(err(spread(Some(vec![]), None))
        .to_string()
        .contains("at least one node"));
    assert!(err(spread(Some(vec![1, 1]), None))
        .to_string()
        .contains("node 1 twice"));
    let e = err(spread(Some(vec![0, 1]), Some(vec![1, 2, 3]))).to_string();
    assert!(e.contains("3 weights for 2 nodes (0,1)"), "{e}");
    assert!(err(spread(Some(vec![0, 1]), Some(vec![1, 0])))
        .to_string()
        .contains("at least 1"));
    let mut both = spread(Some(vec![0, 1]), None);
    both.matrix = true;
    assert!(matches!(err(both), PlanError::Conflict(_)));
    let dom = DomainOptions {
        mix: Mix::Read,
        array_bytes_per_thread: Some(1 << 20),
        huge_pages: HugePages::Off,
        samples: 3,
        isa: Isa::Scalar,
        fclk_mhz: None,
    };
    assert!(matches!(
        domain_plan(&m, &spread(None, None), &dom),
        Err(PlanError::Conflict(_))
    ));
    for e in [
        err(spread(Some(vec![1, 1]), None)),
        err(spread(Some(vec![0]), Some(vec![2, 2]))),
    ] {
        assert!(!e.to_string().contains('\n'));
    }
}

#[test]
fn stream_interleave_all_runs_threads_on_every_node() {
    let t = fixture("epyc7601-2s");
    let m = machine(&t);
    let opt = StreamOptions {
        array_bytes: Some(64 << 20),
        threads: None,
        ntimes: 10,
        huge_pages: HugePages::Off,
        isa: Isa::Scalar,
        non_temporal: false,
    };
    let p = stream_plan(&m, &spread(None, None), &opt).unwrap();
    assert_eq!(p.members.len(), t.cpus.len());
    assert_eq!(p.interleave.unwrap().nodes.len(), 8);
    let mut cpu_nodes: Vec<u32> = p
        .members
        .iter()
        .map(|x| t.cpu(x.cpu).unwrap().node.unwrap())
        .collect();
    cpu_nodes.dedup();
    assert_eq!(cpu_nodes, (0..8).collect::<Vec<_>>());
}

fn concurrent(pattern: ConcurrentPattern) -> ConcurrentOptions {
    ConcurrentOptions {
        pattern,
        mix: Mix::Copy,
        threads: Some(2),
        array_bytes_per_thread: Some(1 << 20),
        huge_pages: HugePages::Off,
        samples: 3,
        isa: Isa::Scalar,
    }
}

#[test]
fn concurrent_patterns_name_their_streams_and_sockets() {
    let t = fixture("epyc7601-2s");
    let m = machine(&t);
    let p = concurrent_plan(
        &m,
        &Selection::default(),
        &concurrent(ConcurrentPattern::AllRemote),
    )
    .unwrap();
    let pairs: Vec<(u32, u32)> = p.streams.iter().map(|s| (s.cpu_node, s.mem_node)).collect();
    assert_eq!(pairs, (0..8).map(|n| (n, (n + 1) % 8)).collect::<Vec<_>>());
    assert!(p.streams.iter().all(|s| s.cpus.len() == 2));
    // Nodes 0-3 are socket 0, 4-7 socket 1: 3 -> 4 and 7 -> 0 cross.
    assert_eq!(p.sockets[3], (Some(0), Some(1)));
    assert_eq!(p.sockets[7], (Some(1), Some(0)));
    assert_eq!(p.sockets[0], (Some(0), Some(0)));
    let sel = Selection {
        cpu_nodes: Some(vec![0, 4]),
        ..Selection::default()
    };
    let p = concurrent_plan(&m, &sel, &concurrent(ConcurrentPattern::Pairs)).unwrap();
    let pairs: Vec<(u32, u32)> = p.streams.iter().map(|s| (s.cpu_node, s.mem_node)).collect();
    assert_eq!(pairs, [(0, 4), (4, 0)]);
    let p = concurrent_plan(
        &m,
        &Selection::default(),
        &concurrent(ConcurrentPattern::AllLocal),
    )
    .unwrap();
    assert!(p.streams.iter().all(|s| s.cpu_node == s.mem_node));
    let sel = Selection {
        matrix: true,
        ..Selection::default()
    };
    assert!(matches!(
        concurrent_plan(&m, &sel, &concurrent(ConcurrentPattern::AllLocal)),
        Err(PlanError::Conflict(_))
    ));
}

#[test]
fn load_nodes_put_load_threads_and_their_memory_where_asked() {
    let t = fixture("epyc7601-2s");
    let m = machine(&t);
    // Latency on node 0 while socket 1's nodes 4 and 5 load their own memory.
    let p = loaded_plan(
        &m,
        &loaded(|o| {
            o.load_nodes = Some(vec![4, 5]);
            o.load_mem_nodes = Some(vec![4, 5]);
        }),
    )
    .unwrap();
    assert_eq!(p.mem_node, 0);
    assert_eq!(p.load.len(), 32, "16 CPUs on each of the two nodes");
    for l in &p.load {
        let node = t.cpu(l.member.cpu).unwrap().node.unwrap();
        assert!(node == 4 || node == 5);
        assert_eq!(l.member.mem_node, node);
    }
    // One memory node for all load threads.
    let p = loaded_plan(
        &m,
        &loaded(|o| {
            o.load_nodes = Some(vec![4, 5]);
            o.load_mem_nodes = Some(vec![0]);
        }),
    )
    .unwrap();
    assert!(p.load.iter().all(|l| l.member.mem_node == 0));
    let e = loaded_plan(
        &m,
        &loaded(|o| {
            o.load_nodes = Some(vec![4, 5]);
            o.load_mem_nodes = Some(vec![0, 1, 2]);
        }),
    )
    .unwrap_err();
    assert!(e.to_string().contains("3 nodes for 2 --load-nodes"), "{e}");
    let e = loaded_plan(
        &m,
        &loaded(|o| {
            o.load_nodes = Some(vec![4]);
            o.load_cpus = Some(vec![40]);
        }),
    )
    .unwrap_err();
    assert!(matches!(e, PlanError::Conflict(_)));
}
