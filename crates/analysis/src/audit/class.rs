//! One rule from a socket's expected bandwidth loss to its class, and the model of
//! that loss for channels that hold unequal memory.

use std::collections::BTreeMap;

use memfabric_model::PopulationClass;

/// The classes by expected loss: at most the first bound is optimal, at most the
/// second reduced, beyond it not recommended.
pub const OPTIMAL_AT_MOST: f64 = 0.02;
pub const REDUCED_AT_MOST: f64 = 0.15;

/// The class of a socket whose bandwidth is expected to fall short of its ideal by
/// `loss` (0.25 = 25 %). The only rule: whatever causes the loss (empty channels,
/// unequal channels, slow DIMMs) counts through the loss alone.
pub fn class_of_loss(loss: f64) -> PopulationClass {
    if loss <= OPTIMAL_AT_MOST {
        PopulationClass::Optimal
    } else if loss <= REDUCED_AT_MOST {
        PopulationClass::Reduced
    } else {
        PopulationClass::NotRecommended
    }
}

/// The rule and the loss model in words, for `audit --explain` and the docs.
pub fn rule_text() -> String {
    let lines = [
        format!(
            "Class by expected bandwidth loss: optimal up to {}%, reduced above that up to {}%, not recommended above {}%.",
            pct(OPTIMAL_AT_MOST),
            pct(REDUCED_AT_MOST),
            pct(REDUCED_AT_MOST)
        ),
        "Expected loss = 1 - channel share x speed share, against every listed channel populated at the fastest DIMM's rated speed:".into(),
        "- speed share: the slowest running MT/s over the fastest rated MT/s;".into(),
        "- channel share: memory interleaves evenly only across channels of equal size, so each tier of capacity is".into(),
        "  spread over the channels that hold it, and a program streaming over all of the memory spends on each byte".into(),
        "  the time of its tier's channels: share = (memory / listed channels) / sum over tiers (tier's memory / its".into(),
        "  channels). Equal channels, all populated: 1; 6 of 8 equal channels: 0.75; 2 channels of 48G and 6 of 32G: 0.75.".into(),
        "Mixed sizes or ranks with equal memory per channel are findings but cost no expected bandwidth here.".into(),
    ];
    lines.join("\n")
}

fn pct(x: f64) -> String {
    crate::theory::num(100.0 * x)
}

/// The share of `listed` channels' bandwidth a program streaming uniformly over all
/// the memory gets, when channels hold the capacities `levels` (capacity -> channels).
pub fn channel_share(levels: &BTreeMap<u64, Vec<String>>, listed: usize) -> f64 {
    let total: f64 = levels
        .iter()
        .map(|(cap, chs)| *cap as f64 * chs.len() as f64)
        .sum();
    if total <= 0.0 || listed == 0 {
        return 0.0;
    }
    // Tiers from the smallest capacity up: each covers the capacity above the
    // previous tier's, on every channel that holds that much.
    let mut time = 0.0;
    let mut below = 0u64;
    for &cap in levels.keys() {
        let channels: usize = levels.range(cap..).map(|(_, c)| c.len()).sum();
        let bytes = (cap - below) as f64 * channels as f64;
        time += bytes / channels as f64;
        below = cap;
    }
    (total / listed as f64) / time
}

#[cfg(test)]
mod tests {
    use super::*;

    fn levels(list: &[(u64, usize)]) -> BTreeMap<u64, Vec<String>> {
        list.iter()
            .enumerate()
            .map(|(k, &(cap, n))| (cap, (0..n).map(|i| format!("{k}{i}")).collect()))
            .collect()
    }

    #[test]
    fn equal_channels_lose_only_what_is_empty() {
        assert_eq!(channel_share(&levels(&[(32, 8)]), 8), 1.0);
        assert_eq!(channel_share(&levels(&[(32, 6)]), 8), 0.75);
    }

    #[test]
    fn unequal_channels_lose_the_tier_reached_through_fewer_channels() {
        // 256G over 8 channels, then 32G over 2: 288/8 = 36 against 32 + 16 = 48.
        assert_eq!(channel_share(&levels(&[(32, 6), (48, 2)]), 8), 0.75);
        // 2G more on one channel of 8: 258/8 = 32.25 against 32 + 2.
        let s = channel_share(&levels(&[(32, 7), (34, 1)]), 8);
        assert!((s - 32.25 / 34.0).abs() < 1e-12, "{s}");
    }

    #[test]
    fn one_rule_from_loss_to_class() {
        use PopulationClass::*;
        let classes: Vec<_> = [0.0, 0.02, 0.021, 0.10, 0.15, 0.151, 0.25]
            .iter()
            .map(|&l| class_of_loss(l))
            .collect();
        assert_eq!(
            classes,
            [
                Optimal,
                Optimal,
                Reduced,
                Reduced,
                Reduced,
                NotRecommended,
                NotRecommended
            ]
        );
    }
}
