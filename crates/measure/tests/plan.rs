//! Plans resolved against the sysfs trees of real machine shapes in tests/fixtures.

mod common;

use common::{all_cpus, bw, fixture, lat, loaded};
use memfabric_measure::kernels::Isa;
use memfabric_measure::plan::loaded::{loaded_plan, LoadedOptions};
use memfabric_measure::plan::{
    bandwidth_plan, domain_plan, latency_plan, stream_plan, BandwidthOptions, DomainOptions, Machine,
    PlanError, Selection, StreamOptions,
};
use memfabric_model::{HugePages, Mix};

fn matrix() -> Selection {
    Selection {
        matrix: true,
        ..Selection::default()
    }
}

#[test]
fn epyc_matrix_is_8_by_8_from_each_nodes_first_cpu() {
    let t = fixture("epyc7601-2s");
    let m = Machine {
        allowed_cpus: all_cpus(&t),
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    let p = latency_plan(&m, &matrix(), &lat(Some(1 << 30), HugePages::Off)).unwrap();
    assert_eq!(p.cells.len(), 64);
    assert_eq!(p.cpu_nodes, (0..8).collect::<Vec<_>>());
    assert_eq!(p.mem_nodes, (0..8).collect::<Vec<_>>());
    let c = &p.cells[3 * 8 + 5];
    assert_eq!((c.cpu, c.cpu_node, c.mem_node), (24, 3, 5));
    // 16 L3s of 8 MiB: 4x is 512 MiB, above the 256 MiB floor.
    let d = latency_plan(&m, &Selection::default(), &lat(None, HugePages::Off)).unwrap();
    assert_eq!(d.size_bytes, 512 << 20);
    assert!(
        d.cells.iter().all(|c| c.cpu_node == c.mem_node),
        "default is local only"
    );
}

#[test]
fn cpu_less_node_is_a_column_never_a_row() {
    let t = fixture("cxl-cpuless");
    let m = Machine {
        allowed_cpus: all_cpus(&t),
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    let p = latency_plan(&m, &matrix(), &lat(Some(1 << 20), HugePages::Off)).unwrap();
    assert_eq!((p.cpu_nodes.clone(), p.mem_nodes.clone()), (vec![0], vec![0, 1]));
    let sel = Selection {
        cpu_nodes: Some(vec![1]),
        ..Selection::default()
    };
    let e = latency_plan(&m, &sel, &lat(Some(1 << 20), HugePages::Off)).unwrap_err();
    assert!(matches!(e, PlanError::NoCpus { node: 1, .. }), "{e}");
    let b = bandwidth_plan(&m, &matrix(), &bw(None)).unwrap();
    assert_eq!(b.cells.len(), 2);
    assert_eq!(b.cells[1].cpus, (0..8).collect::<Vec<_>>());
}

#[test]
fn unknown_nodes_and_cpus_are_named() {
    let t = fixture("this-machine");
    let m = Machine {
        allowed_cpus: all_cpus(&t),
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    let sel = Selection {
        cpu_nodes: Some(vec![7]),
        ..Selection::default()
    };
    let e = latency_plan(&m, &sel, &lat(None, HugePages::Off)).unwrap_err();
    assert_eq!(e.to_string(), "node 7 does not exist (nodes: 0)");
    let sel = Selection {
        cpu: Some(9),
        ..Selection::default()
    };
    let e = latency_plan(&m, &sel, &lat(None, HugePages::Off)).unwrap_err();
    assert_eq!(e.to_string(), "CPU 9 is not online (online CPUs: 0-1)");
    let sel = Selection {
        mem_nodes: Some(vec![3]),
        ..Selection::default()
    };
    assert!(matches!(
        bandwidth_plan(&m, &sel, &bw(None)),
        Err(PlanError::UnknownNode { node: 3, .. })
    ));
}

#[test]
fn restricted_cpu_set_is_honoured() {
    let t = fixture("epyc7601-2s");
    // As under `taskset -c 8-15`: only node 1's first threads.
    let m = Machine {
        allowed_cpus: (8..16).collect(),
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    let p = latency_plan(&m, &matrix(), &lat(Some(1 << 20), HugePages::Off)).unwrap();
    assert_eq!(p.cpu_nodes, vec![1]);
    assert!(p.cells.iter().all(|c| c.cpu == 8));
    let b = bandwidth_plan(&m, &Selection::default(), &bw(None)).unwrap();
    assert_eq!(
        b.cells[0].cpus,
        (8..16).collect::<Vec<_>>(),
        "siblings 72-79 are not allowed"
    );
    let sel = Selection {
        cpu_nodes: Some(vec![0]),
        ..Selection::default()
    };
    let e = latency_plan(&m, &sel, &lat(None, HugePages::Off)).unwrap_err();
    assert!(e.to_string().contains("taskset"), "{e}");
    let e = latency_plan(
        &m,
        &Selection {
            cpu: Some(0),
            ..Selection::default()
        },
        &lat(None, HugePages::Off),
    );
    assert!(matches!(e, Err(PlanError::CpuNotAllowed { cpu: 0, .. })));
}

#[test]
fn memory_and_huge_pages_are_checked_before_allocating() {
    let t = fixture("epyc7601-2s");
    let m = Machine {
        allowed_cpus: all_cpus(&t),
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    let e = latency_plan(&m, &Selection::default(), &lat(Some(200 << 30), HugePages::Off)).unwrap_err();
    assert!(matches!(e, PlanError::TooLarge { node: 0, .. }), "{e}");
    // A chase indexes elements with u32: 1 TiB of 64-byte lines is too many.
    let e = latency_plan(&m, &Selection::default(), &lat(Some(1 << 40), HugePages::Off)).unwrap_err();
    assert!(e.to_string().contains("2^32 elements"), "{e}");
    // Node 0 has one free 1 GiB page in the fixture: 2 GiB needs another.
    let e = latency_plan(&m, &Selection::default(), &lat(Some(2 << 30), HugePages::Huge1G)).unwrap_err();
    let text = e.to_string();
    assert!(
        text.contains("hugepages-1048576kB/nr_hugepages") && text.contains("echo 3 "),
        "{text}"
    );
    let t = fixture("this-machine");
    let m = Machine {
        allowed_cpus: all_cpus(&t),
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    let e = latency_plan(&m, &Selection::default(), &lat(Some(4 << 20), HugePages::Huge2M)).unwrap_err();
    assert!(e.to_string().contains("echo 3 | sudo tee"), "{e}");
}

#[test]
fn thread_counts_are_bounded_by_the_node() {
    let t = fixture("snc-2s");
    let m = Machine {
        allowed_cpus: all_cpus(&t),
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    let node0 = t.node(0).unwrap().cpus.len();
    let e = bandwidth_plan(&m, &Selection::default(), &bw(Some(node0 + 1))).unwrap_err();
    assert!(matches!(e, PlanError::TooManyThreads { .. }), "{e}");
    let p = bandwidth_plan(&m, &matrix(), &bw(Some(2))).unwrap();
    assert_eq!(p.cells.len(), 16);
    assert!(p.cells.iter().all(|c| c.cpus.len() == 2));
}

#[test]
fn mixes_and_thread_lists_multiply_the_cells() {
    let t = fixture("epyc7601-2s");
    let m = Machine {
        allowed_cpus: all_cpus(&t),
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    let opt = BandwidthOptions {
        mixes: vec![Mix::Read, Mix::Triad],
        threads: vec![1, 2, 8],
        ..bw(None)
    };
    let p = bandwidth_plan(&m, &Selection::default(), &opt).unwrap();
    // 2 mixes x 3 thread counts x 8 local cells, mix-major.
    assert_eq!(p.cells.len(), 48);
    assert!(p.cells[..24].iter().all(|c| c.mix == Mix::Read));
    let lens: Vec<usize> = p.cells[..3].iter().map(|c| c.cpus.len()).collect();
    assert_eq!(lens, [1, 2, 8]);
    assert_eq!(p.cells[1].cpus, [0, 1]);
    let nt = BandwidthOptions {
        mixes: vec![Mix::CopyNt],
        ..bw(None)
    };
    let e = bandwidth_plan(&m, &Selection::default(), &nt).unwrap_err();
    assert!(e.to_string().contains("needs streaming stores"), "{e}");
}

fn dom(fclk: Option<f64>) -> DomainOptions {
    DomainOptions {
        mix: Mix::Read,
        array_bytes_per_thread: Some(1 << 20),
        huge_pages: HugePages::Off,
        samples: 2,
        isa: Isa::Scalar,
        fclk_mhz: fclk,
    }
}

#[test]
fn per_domain_takes_every_l3_domain_with_its_own_node() {
    let t = fixture("epyc7601-2s");
    let m = Machine {
        allowed_cpus: all_cpus(&t),
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    let p = domain_plan(&m, &Selection::default(), &dom(Some(1333.0))).unwrap();
    assert_eq!(p.domains.len(), t.l3_domains.len());
    for (d, l3) in p.domains.iter().zip(&t.l3_domains) {
        let cpus: Vec<u32> = d.members.iter().map(|x| x.cpu).collect();
        assert_eq!(cpus, l3.cpus);
        assert!(d.members.iter().all(|x| Some(x.mem_node) == l3.node));
    }
    // One node's domains only, all reading node 0.
    let sel = Selection {
        cpu_nodes: Some(vec![1]),
        mem_nodes: Some(vec![0]),
        ..Selection::default()
    };
    let p = domain_plan(&m, &sel, &dom(None)).unwrap();
    assert_eq!(p.domains.len(), 2, "two CCXs per EPYC 7601 die");
    assert!(p.domains.iter().flat_map(|d| &d.members).all(|x| x.mem_node == 0));
    let e = domain_plan(&m, &Selection::default(), &dom(Some(f64::NAN))).unwrap_err();
    assert!(e.to_string().contains("--fclk"), "{e}");
}

#[test]
fn stream_splits_threads_over_nodes_and_keeps_parts_local() {
    let t = fixture("epyc7601-2s");
    let m = Machine {
        allowed_cpus: all_cpus(&t),
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    let opt = StreamOptions {
        array_bytes: Some(64 << 20),
        threads: None,
        ntimes: 10,
        huge_pages: HugePages::Off,
        isa: Isa::Scalar,
        non_temporal: false,
    };
    let p = stream_plan(&m, &Selection::default(), &opt).unwrap();
    assert_eq!(p.members.len(), t.cpus.len());
    assert!(p
        .members
        .iter()
        .all(|x| Some(x.mem_node) == t.cpu(x.cpu).unwrap().node));
    assert_eq!(p.array_elements, 8 << 20);
    let few = StreamOptions {
        threads: Some(3),
        ..opt
    };
    let p = stream_plan(&m, &Selection::default(), &few).unwrap();
    assert_eq!(p.members.iter().map(|x| x.cpu).collect::<Vec<_>>(), [0, 1, 2]);
    let huge = StreamOptions {
        array_bytes: Some(1 << 50),
        ..few
    };
    assert!(matches!(
        stream_plan(&m, &Selection::default(), &huge),
        Err(PlanError::TooLarge { .. })
    ));
}

#[test]
fn loaded_latency_puts_load_and_latency_where_asked() {
    let t = fixture("epyc7601-2s");
    let m = Machine {
        allowed_cpus: all_cpus(&t),
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    // Default: the first CPU measures, every other CPU loads its node's memory.
    let p = loaded_plan(&m, &loaded(|_| {})).unwrap();
    assert_eq!((p.latency_cpu, p.mem_node), (0, 0));
    assert_eq!(p.load.len(), t.cpus.len() - 1);
    assert_eq!(p.steps.len(), 16);
    assert_eq!(p.steps[0].delay_spins, 0);
    assert!(p.steps.windows(2).all(|w| w[1].delay_spins > w[0].delay_spins));
    // Load on CCX 1, latency on CCX 0, as in "what a busy neighbour does".
    let p = loaded_plan(
        &m,
        &loaded(|o| {
            o.latency_domain = Some(0);
            o.load_domain = Some(1);
        }),
    )
    .unwrap();
    assert_eq!(p.latency_cpu, t.l3_domains[0].cpus[0]);
    let load: Vec<u32> = p.load.iter().map(|l| l.member.cpu).collect();
    assert_eq!(load, t.l3_domains[1].cpus);
    // Spread: one step per domain, each adding one domain's CPUs.
    let p = loaded_plan(&m, &loaded(|o| o.spread = true)).unwrap();
    assert_eq!(p.steps.len(), t.l3_domains.len());
    assert_eq!(p.steps[2].domains, [0, 1, 2]);
    assert!(p.load.iter().all(|l| l.member.cpu != p.latency_cpu));
    let own = &t.l3_domains[0].cpus;
    assert!(p
        .load
        .iter()
        .filter(|l| own.contains(&l.member.cpu))
        .all(|l| l.from_step == 0));
}

#[test]
fn loaded_latency_refuses_what_cannot_run() {
    let t = fixture("epyc7601-2s");
    let m = Machine {
        allowed_cpus: all_cpus(&t),
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    let err = |f: fn(&mut LoadedOptions)| loaded_plan(&m, &loaded(f)).unwrap_err().to_string();
    assert!(err(|o| o.points = 1).contains("--points must be 2 to 24, not 1"));
    assert!(err(|o| o.points = 100).contains("--points must be 2 to 24, not 100"));
    assert!(err(|o| o.load_cpus = Some(vec![0, 1])).contains("cannot also load"));
    assert!(err(|o| o.latency_domain = Some(99)).contains("L3 domain 99 does not exist"));
    assert!(err(|o| {
        o.spread = true;
        o.load_domain = Some(1);
    })
    .contains("--spread"));
    assert!(err(|o| o.mem_node = Some(42)).contains("node 42 does not exist"));
    let single = Machine {
        allowed_cpus: vec![5],
        topo: &t,
        roots: memfabric_topo::Roots::live(),
    };
    let e = loaded_plan(&single, &loaded(|_| {})).unwrap_err().to_string();
    assert!(e.contains("no CPU left to load"), "{e}");
}
