//! The pure part of every GPU measurement: sizes, launch shapes, byte counting, the
//! chase's layout and the naming of latency levels. Tested everywhere, GPU or not.

use memfabric_analysis::levels::{detect, Direction};
use memfabric_measure::order::{sattolo, Rng};
use memfabric_model::{GpuLatencyPoint, GpuLevel, GpuStreamKernel};

/// Default array sizes of `gpu bandwidth`: from inside the L2 to BabelStream's
/// 2^28 doubles (2 GiB per array), each size one point.
pub const DEFAULT_ARRAY_BYTES: [u64; 6] = [4 << 20, 16 << 20, 64 << 20, 256 << 20, 1 << 30, 2 << 30];

/// Threads per block of the stream kernels.
pub const BLOCK_THREADS: u32 = 256;
/// Resident blocks per SM the grid aims for (8 x 256 = 2048 threads, the most an
/// SM holds on Volta and later).
pub const BLOCKS_PER_SM: u32 = 8;

/// The grid for `elements` doubles walked as 16-byte pairs by a grid-stride loop:
/// enough blocks to fill every SM, never more than there are pairs to walk.
pub fn grid_blocks(elements: u64, sm_count: u32, block_threads: u32) -> u32 {
    let pairs = elements.div_ceil(2).max(1);
    let needed = pairs.div_ceil(u64::from(block_threads.max(1)));
    needed.min(u64::from(sm_count.max(1) * BLOCKS_PER_SM)) as u32
}

/// Bytes one launch of `kernel` moves over arrays of `elements` doubles, counted as
/// BabelStream counts them.
pub fn bytes_per_launch(kernel: GpuStreamKernel, elements: u64) -> u64 {
    elements * kernel.bytes_per_element()
}

/// Launches per timed sample: enough for about `target_bytes`, so that arrays that
/// fit in the L2 still give samples far longer than the event timer's resolution.
pub fn launches_per_sample(bytes_per_launch: u64, target_bytes: u64) -> u32 {
    target_bytes.div_ceil(bytes_per_launch.max(1)).clamp(1, 4096) as u32
}

/// Arrays `gpu bandwidth` allocates at each size, whichever kernels run: BabelStream's a, b, c.
pub const ARRAYS: u64 = 3;

/// Sizes that fit: all three arrays in `free_bytes` with 10 % to spare. Returns the
/// sizes kept and those dropped.
pub fn fitting_sizes(sizes: &[u64], free_bytes: u64) -> (Vec<u64>, Vec<u64>) {
    let room = free_bytes / 10 * 9;
    sizes.iter().partition(|&&s| s.saturating_mul(ARRAYS) <= room)
}

/// The largest chase the kernel can index: u32 word indexes, 4 bytes a word.
pub const MAX_CHASE_BYTES: u64 = (u32::MAX as u64 + 1) * 4;

/// Chase sizes from `min` to `max` bytes, `per_octave` points per doubling, each a
/// whole number of strides.
pub fn chase_sizes(min: u64, max: u64, per_octave: u32, stride: u64) -> Vec<u64> {
    let mut out: Vec<u64> = Vec::new();
    let steps = (max as f64 / min as f64).log2() * f64::from(per_octave.max(1));
    for k in 0..=steps.round() as u64 {
        let s = min as f64 * 2f64.powf(k as f64 / f64::from(per_octave.max(1)));
        let bytes = ((s / stride as f64).round() as u64).max(1) * stride;
        if out.last() != Some(&bytes) && bytes <= max {
            out.push(bytes);
        }
    }
    out
}

/// A random cyclic chase over `size / stride` elements as the kernel reads it:
/// `next[p]` is the word index of the element after the one at word `p`, one used
/// word per stride. Returns the words and the start.
pub fn chase_words(size: u64, stride: u64, seed: u64) -> (Vec<u32>, u32) {
    let per = (stride / 4) as usize;
    let n = (size / stride).max(1) as usize;
    let succ = sattolo(n, &mut Rng::new(seed));
    let mut words = vec![0u32; n * per];
    for (k, &s) in succ.iter().enumerate() {
        words[k * per] = s * per as u32;
    }
    (words, 0)
}

/// Follows a chase on the host: the elements visited before returning to `start`.
pub fn cycle_length(words: &[u32], start: u32) -> u64 {
    let mut p = start;
    let mut n = 0;
    loop {
        p = words[p as usize];
        n += 1;
        if p == start || n > words.len() as u64 {
            return n;
        }
    }
}

/// Timed loads per chase point: enough to dwarf the loop's start, few enough that a
/// point in device memory takes tens of milliseconds.
pub fn chase_steps(elements: u64) -> u64 {
    (4 * elements).clamp(50_000, 200_000)
}

/// Untimed loads before timing: the whole cycle while it may fit in a cache, so it
/// is resident, and a fixed walk beyond.
pub fn warm_steps(elements: u64, size: u64, l2_bytes: u64) -> u64 {
    if size <= 2 * l2_bytes {
        elements
    } else {
        elements.min(100_000)
    }
}

/// Names the plateaus of a latency curve (in cycles) from the smallest size: L1 first,
/// device memory last where the curve reaches past twice the L2, L2 (or L2 near and
/// L2 far where two are found) between.
pub fn name_levels(points: &[GpuLatencyPoint], l2_bytes: u64) -> Vec<GpuLevel> {
    let curve: Vec<(f64, f64)> = points
        .iter()
        .map(|p| (p.size_bytes as f64, p.latency_cycles))
        .collect();
    let levels = detect(&curve, Direction::Rises);
    let n = levels.plateaus.len();
    let reaches_memory = points.last().is_some_and(|p| p.size_bytes > 2 * l2_bytes) && n >= 2;
    let caches = if reaches_memory { n - 1 } else { n };
    levels
        .plateaus
        .iter()
        .enumerate()
        .map(|(k, pl)| {
            let name = match (k, caches) {
                (0, _) => "L1".to_string(),
                (k, _) if k >= caches => "device memory".to_string(),
                (_, 2) => "L2".to_string(),
                (1, 3) => "L2 near".to_string(),
                (2, 3) => "L2 far".to_string(),
                (k, _) => format!("L2 ({k})"),
            };
            let slice = &points[pl.first..=pl.last];
            let median_of = |f: fn(&GpuLatencyPoint) -> f64| {
                let mut v: Vec<f64> = slice.iter().map(f).collect();
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            GpuLevel {
                name,
                first_bytes: points[pl.first].size_bytes,
                last_bytes: points[pl.last].size_bytes,
                latency_cycles: median_of(|p| p.latency_cycles),
                latency_ns: median_of(|p| p.latency_ns),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn grids_fill_every_sm_and_no_more_than_the_work() {
        // H100 PCIe: 114 SMs; 2 GiB of doubles = 2^28 elements.
        assert_eq!(grid_blocks(1 << 28, 114, 256), 114 * 8);
        assert_eq!(grid_blocks(1000, 114, 256), 2, "500 pairs in 256-thread blocks");
        assert_eq!(grid_blocks(0, 114, 256), 1);
    }

    #[test]
    fn bytes_are_counted_as_babelstream_counts_them() {
        let n = 1 << 28;
        assert_eq!(bytes_per_launch(GpuStreamKernel::Copy, n), 2 * 8 * n);
        assert_eq!(bytes_per_launch(GpuStreamKernel::Triad, n), 3 * 8 * n);
        assert_eq!(bytes_per_launch(GpuStreamKernel::Read, n), 8 * n);
        assert_eq!(bytes_per_launch(GpuStreamKernel::Write, n), 8 * n);
    }

    #[test]
    fn small_arrays_take_many_launches_per_sample() {
        assert_eq!(launches_per_sample(3 << 20, 1 << 30), 342);
        assert_eq!(launches_per_sample(6 << 30, 1 << 30), 1);
        assert_eq!(launches_per_sample(1, u64::MAX), 4096);
    }

    #[test]
    fn sizes_that_do_not_fit_are_dropped() {
        let (keep, drop) = fitting_sizes(&DEFAULT_ARRAY_BYTES, 80 << 30);
        assert_eq!(keep, DEFAULT_ARRAY_BYTES.to_vec(), "3 x 2 GiB fit in 80 GiB");
        // 3 x 1 GiB fit in 90 % of 4 GiB; read alone would fit 2 GiB, but all three
        // arrays are allocated whichever kernels run.
        let (keep, drop2) = fitting_sizes(&DEFAULT_ARRAY_BYTES, 4 << 30);
        assert!(drop.is_empty());
        assert_eq!(keep.last(), Some(&(1 << 30)));
        assert_eq!(drop2, vec![2 << 30]);
    }

    #[test]
    fn chase_sizes_cover_the_range_in_whole_strides() {
        let s = chase_sizes(1 << 10, 256 << 20, 2, 128);
        assert_eq!(s.first(), Some(&1024));
        assert_eq!(s.last(), Some(&(256 << 20)));
        assert_eq!(s.len(), 37, "18 octaves, 2 points each, and the end");
        assert!(s.iter().all(|b| b % 128 == 0) && s.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn levels_of_an_h100_like_curve() {
        // L1 ~33 cycles to 160K, L2 near ~260 to 12M, far ~480 to 48M, HBM ~650.
        let sizes = chase_sizes(1 << 10, 256 << 20, 2, 128);
        let cycles = |s: u64| match s {
            s if s <= 160 << 10 => 33.0,
            s if s <= 12 << 20 => 262.0,
            s if s <= 48 << 20 => 480.0,
            _ => 655.0,
        };
        let points: Vec<GpuLatencyPoint> = sizes
            .iter()
            .map(|&s| GpuLatencyPoint {
                size_bytes: s,
                loads: 1,
                latency_cycles: cycles(s),
                latency_ns: cycles(s) / 1.755,
                sm_clock_mhz: 1755.0,
            })
            .collect();
        let levels = name_levels(&points, 50 << 20);
        let names: Vec<&str> = levels.iter().map(|l| l.name.as_str()).collect();
        assert_eq!(names, ["L1", "L2 near", "L2 far", "device memory"]);
        assert_eq!(levels[0].latency_cycles, 33.0);
        assert_eq!(levels[3].latency_cycles, 655.0);
        assert!((levels[1].latency_ns - 262.0 / 1.755).abs() < 1e-9);
    }

    proptest! {
        #[test]
        fn every_chase_is_one_cycle_through_every_element(
            elements in 1u64..3000, stride_words in 1u64..40, seed: u64
        ) {
            let stride = stride_words * 4;
            let (words, start) = chase_words(elements * stride, stride, seed);
            prop_assert_eq!(words.len() as u64, elements * stride_words);
            prop_assert_eq!(cycle_length(&words, start), elements);
            // Every used word points at a used word.
            for k in 0..elements as usize {
                let next = words[k * stride_words as usize];
                prop_assert_eq!(u64::from(next) % stride_words, 0);
            }
        }

        #[test]
        fn grids_are_never_empty_nor_larger_than_needed(elements in 0u64..(1 << 40), sms in 1u32..200) {
            let g = grid_blocks(elements, sms, BLOCK_THREADS);
            prop_assert!(g >= 1 && g <= sms * BLOCKS_PER_SM);
            prop_assert!(u64::from(g - 1) * u64::from(BLOCK_THREADS) < elements.div_ceil(2).max(1));
        }
    }
}
