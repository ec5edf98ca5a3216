use memfabric_model::*;

use super::*;

fn record() -> GpuRecord {
    let state = |sm, w, t| GpuState {
        sm_clock_mhz: Some(sm),
        memory_clock_mhz: Some(2619),
        power_w: Some(w),
        temperature_c: Some(t),
    };
    GpuRecord {
        info: GpuInfo {
            ordinal: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            compute_capability: "9.0".into(),
            sm_count: 132,
            memory_bytes: 80 << 30,
            l2_bytes: 50 << 20,
            memory_bus_width_bits: 5120,
            memory_clock_mhz: 2619.0,
            sm_clock_mhz: 1980.0,
            peak_memory_gb_s: Some(3352.3),
            pci_bus_id: "0000:17:00.0".into(),
            numa_node: Some(0),
            pcie: Some(PcieLink {
                generation: Some(5),
                width: Some(16),
                max_generation: Some(5),
                max_width: Some(16),
                source: "nvml".into(),
            }),
            driver_version: Some("570.86.15".into()),
            cuda_version: "12.8".into(),
            nvml: None,
        },
        start: state(345, 72.5, 31),
        end: state(1980, 310.0, 44),
    }
}

fn summary(v: &[f64]) -> Summary {
    Summary::of(v).unwrap()
}

#[test]
fn bandwidth_table() {
    let point = |kernel, array_bytes: u64, gb: &[f64]| GpuBandwidthPoint {
        kernel,
        array_bytes,
        bytes_per_launch: array_bytes / 8 * GpuStreamKernel::bytes_per_element(kernel),
        grid_blocks: 1056,
        samples_gb_s: gb.to_vec(),
        bandwidth_gb_s: summary(gb),
        best_fraction_of_peak: Some(summary(gb).max / 3352.3),
        validated_elements: if kernel == GpuStreamKernel::Read {
            0
        } else {
            array_bytes / 8
        },
    };
    let r = GpuBandwidthReport {
        gpu: Some(record()),
        kernels: vec![GpuStreamKernel::Read, GpuStreamKernel::Triad],
        array_bytes: vec![2 << 30],
        block_threads: 256,
        samples: 3,
        outcome: Outcome::Ok(GpuBandwidthMeasurement {
            points: vec![
                point(GpuStreamKernel::Read, 2 << 30, &[3101.0, 3090.5, 3099.0]),
                point(GpuStreamKernel::Triad, 2 << 30, &[3050.2, 3041.0, 3048.8]),
            ],
        }),
    };
    insta::assert_snapshot!(render_bandwidth(&r));
}

#[test]
fn latency_curve_and_levels() {
    let points: Vec<GpuLatencyPoint> = [
        (1u64 << 10, 33.0),
        (64 << 10, 34.0),
        (4 << 20, 262.0),
        (32 << 20, 480.0),
        (256 << 20, 655.0),
    ]
    .iter()
    .map(|&(s, c)| GpuLatencyPoint {
        size_bytes: s,
        loads: 50_000,
        latency_cycles: c,
        latency_ns: c / 1.98,
        sm_clock_mhz: 1980.0,
    })
    .collect();
    let level = |name: &str, a: u64, b: u64, c: f64| GpuLevel {
        name: name.into(),
        first_bytes: a,
        last_bytes: b,
        latency_cycles: c,
        latency_ns: c / 1.98,
    };
    let r = GpuLatencyReport {
        gpu: Some(record()),
        stride_bytes: 128,
        seed: 1,
        outcome: Outcome::Ok(GpuLatencyMeasurement {
            levels: vec![
                level("L1", 1 << 10, 64 << 10, 33.5),
                level("L2", 4 << 20, 32 << 20, 371.0),
                level("device memory", 256 << 20, 256 << 20, 655.0),
            ],
            points,
        }),
    };
    insta::assert_snapshot!(latency(&r));
}

#[test]
fn copies_loaded_latency_and_injection() {
    let copy_cell = |memory, node, engine, direction, gb: &[f64]| GpuCopyCell {
        memory,
        node,
        engine,
        direction,
        outcome: Outcome::Ok(GpuCopyMeasurement {
            bandwidth_gb_s: summary(gb),
            samples_gb_s: gb.to_vec(),
            bytes_per_sample: 1 << 30,
            placement: None,
        }),
    };
    let c = GpuCopyReport {
        gpu: Some(record()),
        size_bytes: 1 << 30,
        samples: 2,
        nodes: vec![0],
        outcome: Outcome::Ok(vec![
            copy_cell(
                HostMemory::Pageable,
                None,
                CopyEngine::CopyEngine,
                CopyDirection::HostToDevice,
                &[9.5, 9.4],
            ),
            copy_cell(
                HostMemory::PinnedNode,
                Some(0),
                CopyEngine::Sm,
                CopyDirection::Bidirectional,
                &[101.0, 99.0],
            ),
            GpuCopyCell {
                memory: HostMemory::PinnedNode,
                node: Some(1),
                engine: CopyEngine::CopyEngine,
                direction: CopyDirection::DeviceToHost,
                outcome: Outcome::Failed {
                    reason: "cuMemHostRegister of 1073741824 bytes: out of memory".into(),
                },
            },
        ]),
    };
    let inj = GpuInjectionReport {
        gpu: Some(record()),
        cpu: 3,
        node: 0,
        buffer_bytes: 2 << 20,
        outcome: Outcome::Ok(GpuInjection {
            cases: [
                (InjectionCase::GpuWritten, 41.0),
                (InjectionCase::Flushed, 120.0),
                (InjectionCase::CpuWritten, 30.0),
            ]
            .iter()
            .map(|&(case, ns)| GpuInjectionCase {
                case,
                samples_ns: vec![ns],
                latency_ns: summary(&[ns]),
            })
            .collect(),
            lands_in_cache: true,
            saved_ns: 79.0,
            explanation: "GPU-written lines read like CPU-written ones".into(),
        }),
    };
    let skipped = GpuLoadedLatencyReport {
        gpu: None,
        cpu: 0,
        node: 0,
        chase_bytes: 256 << 20,
        copy_bytes: 64 << 20,
        direction: CopyDirection::Bidirectional,
        outcome: Outcome::Skipped {
            reason: "no NVIDIA driver found (libcuda.so could not be loaded)".into(),
        },
    };
    insta::assert_snapshot!(format!("{}\n{}\n{}", copy(&c), injection(&inj), loaded(&skipped)));
}
