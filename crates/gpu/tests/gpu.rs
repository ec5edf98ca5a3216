//! The GPU crate from outside. Without an NVIDIA driver every measurement is a skip
//! that says so; the tests marked `#[ignore]` need a GPU and run on one with
//! `cargo test -p memfabric-gpu -- --ignored`.

use memfabric_gpu::bandwidth::GpuBandwidthPlan;
use memfabric_gpu::latency::GpuLatencyPlan;
use memfabric_gpu::sys::driver_present;
use memfabric_gpu::{bandwidth, latency, with_gpu, Gpu, GpuError};
use memfabric_measure::Silent;
use memfabric_model::{GpuStreamKernel, Outcome};

#[test]
fn without_a_driver_every_measurement_is_skipped_and_says_why() {
    if driver_present() {
        eprintln!("an NVIDIA driver is installed here: this test is for machines without one");
        return;
    }
    assert!(matches!(
        Gpu::open(0, &memfabric_topo::Roots::live().sys),
        Err(GpuError::NoDriver)
    ));
    let plan = GpuBandwidthPlan {
        kernels: vec![GpuStreamKernel::Triad],
        array_bytes: vec![1 << 20],
        block_threads: 256,
        samples: 2,
    };
    let (gpu, outcome) = with_gpu(0, &memfabric_topo::Roots::live().sys, |g| {
        bandwidth::measure(g, &plan, &Silent)
    });
    assert!(gpu.is_none());
    match outcome {
        Outcome::Skipped { reason } => assert!(reason.contains("no NVIDIA driver found"), "{reason}"),
        o => panic!("expected a skip, got {o:?}"),
    }
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn device_memory_triad_is_validated_and_near_the_peak() {
    let plan = GpuBandwidthPlan {
        kernels: GpuStreamKernel::ALL.to_vec(),
        array_bytes: vec![4 << 20, 1 << 30],
        block_threads: 256,
        samples: 5,
    };
    let (gpu, outcome) = with_gpu(0, &memfabric_topo::Roots::live().sys, |g| {
        bandwidth::measure(g, &plan, &Silent)
    });
    let gpu = gpu.expect("a GPU");
    let Outcome::Ok(m) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(m.points.len(), 8);
    let triad = m
        .points
        .iter()
        .find(|p| p.kernel == GpuStreamKernel::Triad && p.array_bytes == 1 << 30)
        .unwrap();
    assert_eq!(triad.validated_elements, (1 << 30) / 8);
    let f = triad
        .best_fraction_of_peak
        .expect("a peak from the memory clock and bus");
    assert!(f > 0.5 && f < 1.05, "triad at {:.0} % of the peak", 100.0 * f);
    assert!(!gpu.info.name.is_empty() && gpu.info.sm_count > 0);
}

#[test]
#[ignore = "needs an NVIDIA GPU"]
fn latency_curve_finds_l1_l2_and_device_memory() {
    let plan = GpuLatencyPlan {
        min_bytes: 1 << 10,
        max_bytes: None,
        points_per_octave: 2,
        stride_bytes: 128,
        samples: 3,
        seed: 1,
    };
    let (_, outcome) = with_gpu(0, &memfabric_topo::Roots::live().sys, |g| {
        latency::measure(g, &plan, &Silent)
    });
    let Outcome::Ok(m) = outcome else {
        panic!("{outcome:?}")
    };
    let names: Vec<&str> = m.levels.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names.first(), Some(&"L1"), "{names:?}");
    assert_eq!(names.last(), Some(&"device memory"), "{names:?}");
    assert!(m.levels[0].latency_cycles < m.levels.last().unwrap().latency_cycles / 4.0);
}
