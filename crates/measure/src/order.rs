//! Visit orders for the pointer chase: which line follows which.

use memfabric_model::Pattern;

/// SplitMix64: small, fast, and good enough to shuffle; seeded so runs can be rebuilt.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in 0..n (Lemire's multiply-shift; the tiny bias is irrelevant here).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() as u128 * n as u128) >> 64) as usize
    }
}

/// Sattolo's algorithm: a uniformly random cyclic permutation, returned as successors
/// (`succ[i]` is the element after `i`), so following it from any element visits all.
pub fn sattolo(n: usize, rng: &mut Rng) -> Vec<u32> {
    let mut a: Vec<u32> = (0..n as u32).collect();
    for i in (1..n).rev() {
        let j = rng.below(i);
        a.swap(i, j);
    }
    a
}

/// Fisher-Yates shuffle in place.
fn shuffle(v: &mut [u32], rng: &mut Rng) {
    for i in (1..v.len()).rev() {
        let j = rng.below(i + 1);
        v.swap(i, j);
    }
}

/// The order in which a cycle given as successors visits its elements, from 0.
pub fn cycle_order(succ: &[u32]) -> Vec<u32> {
    let mut order = Vec::with_capacity(succ.len());
    let mut i = 0u32;
    for _ in 0..succ.len() {
        order.push(i);
        i = succ[i as usize];
    }
    order
}

/// The chase as successors (`succ[i]` is the line after line `i`), for `lines` lines
/// grouped in pages of `lines_per_page` (the last page may be partial). Successors
/// let the buffer be linked front to back, which matters for gigabyte buffers.
pub fn successors(pattern: Pattern, lines: usize, lines_per_page: usize, seed: u64) -> Vec<u32> {
    match pattern {
        Pattern::Random => sattolo(lines, &mut Rng::new(seed)),
        _ => order_to_successors(&visit_order(pattern, lines, lines_per_page, seed)),
    }
}

/// Successors of the cycle that visits `order` front to back and wraps around.
pub fn order_to_successors(order: &[u32]) -> Vec<u32> {
    let mut succ = vec![0u32; order.len()];
    for (k, &line) in order.iter().enumerate() {
        succ[line as usize] = order[(k + 1) % order.len()];
    }
    succ
}

/// The sequence of line indices the chase visits, from line 0 for `Random`.
pub fn visit_order(pattern: Pattern, lines: usize, lines_per_page: usize, seed: u64) -> Vec<u32> {
    let mut rng = Rng::new(seed);
    match pattern {
        Pattern::Sequential => (0..lines as u32).collect(),
        Pattern::Random => cycle_order(&sattolo(lines, &mut rng)),
        Pattern::PageRandom => {
            let lpp = lines_per_page.max(1);
            let pages = lines.div_ceil(lpp);
            let page_order = cycle_order(&sattolo(pages, &mut rng));
            let mut order = Vec::with_capacity(lines);
            for page in page_order {
                let first = page as usize * lpp;
                let mut inside: Vec<u32> = (first..(first + lpp).min(lines)).map(|l| l as u32).collect();
                shuffle(&mut inside, &mut rng);
                order.extend(inside);
            }
            order
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::{prop, prop_assert, prop_assert_eq, proptest};

    fn cycle_len(succ: &[u32]) -> usize {
        let mut i = succ[0];
        let mut len = 1;
        while i != 0 {
            i = succ[i as usize];
            len += 1;
            assert!(len <= succ.len(), "not a cycle through 0");
        }
        len
    }

    fn is_permutation(v: &[u32]) -> bool {
        let mut s = v.to_vec();
        s.sort_unstable();
        s.iter().enumerate().all(|(i, &x)| x as usize == i)
    }

    #[test]
    fn sequential_is_identity() {
        assert_eq!(visit_order(Pattern::Sequential, 4, 64, 1), vec![0, 1, 2, 3]);
    }

    #[test]
    fn page_random_stays_inside_pages() {
        let order = visit_order(Pattern::PageRandom, 64 * 8, 64, 7);
        for chunk in order.chunks(64) {
            let page = chunk[0] / 64;
            assert!(chunk.iter().all(|&l| l / 64 == page));
        }
        assert!(is_permutation(&order));
        assert_ne!(
            order[..64],
            (0..64).collect::<Vec<u32>>()[..],
            "lines not shuffled"
        );
    }

    proptest! {
        #[test]
        fn sattolo_is_one_cycle(n in 1usize..2000, seed: u64) {
            let succ = sattolo(n, &mut Rng::new(seed));
            prop_assert!(is_permutation(&succ));
            prop_assert_eq!(cycle_len(&succ), n);
            if n > 1 {
                prop_assert!(succ.iter().enumerate().all(|(i, &s)| s as usize != i), "fixed point");
            }
        }

        #[test]
        fn every_pattern_visits_every_line_once(
            lines in 1usize..3000,
            lpp in prop::sample::select(vec![1usize, 8, 64]),
            seed: u64,
            pattern in prop::sample::select(vec![Pattern::Random, Pattern::PageRandom, Pattern::Sequential]),
        ) {
            let order = visit_order(pattern, lines, lpp, seed);
            prop_assert_eq!(order.len(), lines);
            prop_assert!(is_permutation(&order));
            let succ = successors(pattern, lines, lpp, seed);
            prop_assert!(is_permutation(&succ));
            prop_assert_eq!(cycle_len(&succ), lines);
        }

        #[test]
        fn below_is_in_range(n in 1usize..1_000_000, seed: u64) {
            let mut r = Rng::new(seed);
            for _ in 0..20 {
                prop_assert!(r.below(n) < n);
            }
        }
    }
}
