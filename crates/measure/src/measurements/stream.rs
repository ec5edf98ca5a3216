//! STREAM's four kernels, run as STREAM 5.10 runs them: three arrays split into one
//! contiguous part per thread (OpenMP's static schedule), each part first-touched by its
//! own pinned thread; NTIMES passes of Copy, Scale, Add and Triad, each kernel timed from
//! the first thread's start to the last one's end; the first pass not counted; bytes
//! counted 16/16/24/24 per element; and the arrays checked against the same operations
//! on scalars afterwards.

use memfabric_model::{
    HugePages, Outcome, StreamFunction, StreamMeasurement, StreamReport, StreamValidation, Summary,
};

use crate::bandwidth::SCALAR;
use crate::kernels::{run_pass, Isa, Op, Pass};
use crate::observer::{interrupted, Observer};
use crate::placement::Target;
use crate::team::{self, Arrays, Member};

/// STREAM's names, operations on (a, b, c) and bytes per element, in its order.
/// Array indexes: the destination first, as `Op` expects.
const FUNCTIONS: [(&str, Op, [usize; 3], u64); 4] = [
    ("Copy", Op::Copy, [2, 0, 0], 16),   // c = a
    ("Scale", Op::Scale, [1, 2, 0], 16), // b = s * c
    ("Add", Op::Add, [2, 0, 1], 24),     // c = a + b
    ("Triad", Op::Triad, [0, 1, 2], 24), // a = b + s * c
];

/// STREAM's tolerance for doubles.
pub const EPSILON: f64 = 1e-13;

#[derive(Debug, Clone)]
pub struct StreamPlan {
    pub members: Vec<Member>,
    /// Elements of each array, all threads together.
    pub array_elements: u64,
    /// Passes of the four kernels, the first not counted (STREAM's NTIMES).
    pub ntimes: usize,
    pub huge_pages: HugePages,
    pub isa: Isa,
    /// Streaming stores in all four kernels (as STREAM built with them).
    pub non_temporal: bool,
    /// Every part spread over these nodes instead of its member's node.
    pub interleave: Option<memfabric_model::Interleave>,
}

impl StreamPlan {
    /// Elements of member t's part: contiguous parts differing by at most one.
    fn part(&self, t: usize) -> usize {
        let n = self.members.len() as u64;
        let (base, extra) = (self.array_elements / n, self.array_elements % n);
        (base + u64::from((t as u64) < extra)) as usize
    }
}

pub fn run(plan: &StreamPlan, obs: &dyn Observer) -> StreamReport {
    obs.begin("stream", plan.ntimes as u64);
    let outcome = if obs.cancelled() {
        interrupted()
    } else {
        measure(plan, obs)
    };
    obs.finish();
    StreamReport {
        kernel: plan.isa.name().into(),
        non_temporal: plan.non_temporal,
        huge_pages: plan.huge_pages,
        array_elements: plan.array_elements,
        bytes_per_element: 8,
        ntimes: plan.ntimes,
        cpus: plan.members.iter().map(|m| m.cpu).collect(),
        mem_nodes: plan.members.iter().map(|m| m.mem_node).collect(),
        outcome,
        peak_unknown: None,
        interleave: plan.interleave.clone(),
    }
}

/// One member's part of a, b and c; the kernels' operands are picked from them.
struct Part {
    arrays: Arrays,
}

fn measure(plan: &StreamPlan, obs: &dyn Observer) -> Outcome<StreamMeasurement> {
    let index_of = |m: Member| plan.members.iter().position(|x| *x == m).expect("member");
    let setup = |m: Member| {
        let elements = plan.part(index_of(m));
        let target = Target::of(plan.interleave.as_ref(), m.mem_node);
        let mut arrays = Arrays::placed(m.cpu, &target, 3, elements, plan.huge_pages)?;
        let mut s = arrays.slices();
        // STREAM: a = 1, b = 2, c = 0, then a = 2 * a in its timer-granularity test.
        s[0].fill(2.0);
        s[1].fill(2.0);
        s[2].fill(0.0);
        Ok(Part { arrays })
    };
    let round = |p: &mut Part, r: usize| {
        let (_, op, order, _) = FUNCTIONS[r % 4];
        let mut all: Vec<Option<&mut [f64]>> = p.arrays.slices().into_iter().map(Some).collect();
        let mut operands: Vec<&mut [f64]> = order[..op.arrays()]
            .iter()
            .map(|&i| all[i].take().expect("distinct operands"))
            .collect();
        let pass = Pass {
            op,
            isa: plan.isa,
            non_temporal: plan.non_temporal,
            scalar: SCALAR,
        };
        std::hint::black_box(run_pass(&pass, &mut operands));
        if r % 4 == 3 {
            obs.advance(&format!("pass {}", r / 4 + 1));
        }
    };
    let finish = |mut p: Part, rounds: usize| Ok((check(&p.arrays.slices(), rounds / 4), p.arrays.placement));
    let results = team::run(&plan.members, plan.ntimes * 4, obs, &setup, &round, &finish);
    let mut times = Vec::new();
    let mut placement = Vec::new();
    let mut errors = [0u64; 3];
    let mut expected = [0.0; 3];
    for r in results {
        match r {
            Ok(((check, p), t)) => {
                for (e, c) in errors.iter_mut().zip(check.0) {
                    *e += c;
                }
                expected = check.1;
                placement.push(p);
                times.push(t);
            }
            Err(reason) => return Outcome::Failed { reason },
        }
    }
    let seconds = team::round_seconds(&times);
    summarize(plan, &seconds, (errors, expected), placement, obs)
}

/// The functions' rates from the rounds' times (pass 0 not counted) and the
/// validation of the arrays: `check` is the elements off per array and the values
/// expected.
fn summarize(
    plan: &StreamPlan,
    seconds: &[f64],
    (errors, expected): ([u64; 3], [f64; 3]),
    placement: Vec<memfabric_model::Placement>,
    obs: &dyn Observer,
) -> Outcome<StreamMeasurement> {
    let passes = seconds.len() / 4;
    // A stop between kernels leaves the arrays mid-pass: not a validation failure.
    if passes < 2 || obs.cancelled() {
        return interrupted();
    }
    let functions = FUNCTIONS
        .iter()
        .enumerate()
        .map(|(f, &(name, _, _, per_element))| {
            // Pass 0 is not counted, as in STREAM.
            let t: Vec<f64> = (1..passes).map(|k| seconds[4 * k + f]).collect();
            function(name, per_element, plan.array_elements, &t)
        })
        .collect();
    let validation = StreamValidation {
        passed: errors == [0; 3],
        epsilon: EPSILON,
        errors,
        expected,
    };
    if !validation.passed {
        return Outcome::Failed {
            reason: format!(
                "STREAM validation failed: elements off by more than {EPSILON:e} relative: a {}, b {}, c {}",
                errors[0], errors[1], errors[2]
            ),
        };
    }
    Outcome::Ok(StreamMeasurement {
        functions,
        validation,
        placement,
    })
}

fn function(name: &str, per_element: u64, elements: u64, seconds: &[f64]) -> StreamFunction {
    let bytes = per_element * elements;
    let samples_gb_s: Vec<f64> = seconds.iter().map(|s| bytes as f64 / s * 1e-9).collect();
    let min = seconds.iter().copied().fold(f64::INFINITY, f64::min);
    let max = seconds.iter().copied().fold(0.0, f64::max);
    StreamFunction {
        name: name.into(),
        bytes_per_element: per_element,
        best_gb_s: bytes as f64 / min * 1e-9,
        bandwidth_gb_s: Summary::of(&samples_gb_s).expect("at least one pass"),
        samples_gb_s,
        avg_time_s: seconds.iter().sum::<f64>() / seconds.len() as f64,
        min_time_s: min,
        max_time_s: max,
        noise: None,
        efficiency: None,
    }
}

/// The values STREAM's scalar replay gives after `passes` passes.
pub fn expected_values(passes: usize) -> [f64; 3] {
    let (mut a, mut b, mut c) = (1.0f64, 2.0f64, 0.0f64);
    a *= 2.0;
    for _ in 0..passes {
        c = a;
        b = SCALAR * c;
        c = a + b;
        a = b + SCALAR * c;
    }
    [a, b, c]
}

/// Elements of a, b and c whose relative error exceeds EPSILON, and the expected values.
fn check(arrays: &[&mut [f64]], passes: usize) -> ([u64; 3], [f64; 3]) {
    let want = expected_values(passes);
    let mut errors = [0u64; 3];
    for (q, a) in arrays.iter().enumerate() {
        errors[q] = a
            .iter()
            .filter(|&&x| ((x - want[q]) / want[q]).abs() > EPSILON)
            .count() as u64;
    }
    (errors, want)
}

/// `memfabric stream`.
pub struct Stream;

impl crate::measurement::Measurement for Stream {
    type Options = crate::measurement::Request<crate::plan::StreamOptions>;
    type Plan = crate::measurement::Checked<StreamPlan>;
    type Report = StreamReport;

    fn plan(m: &crate::plan::Machine, o: &Self::Options) -> Result<Self::Plan, crate::plan::PlanError> {
        o.check(|sel, opt| crate::plan::stream_plan(m, sel, opt))
    }

    fn run(p: &Self::Plan, obs: &dyn Observer) -> StreamReport {
        run(&p.plan, obs)
    }

    fn enrich(r: &mut StreamReport, p: &Self::Plan, m: &crate::plan::Machine) {
        let conditions = m.conditions();
        memfabric_analysis::noise::annotate_stream(r, m.topo, &conditions, p.threshold_cv);
        crate::efficiency::annotate_stream(r, m.topo, p.memory_peak.as_ref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_gives_the_values_worked_by_hand() {
        // a=2, b=2, c=0; Copy c=2; Scale b=6; Add c=8; Triad a=6+3*8=30.
        assert_eq!(expected_values(0), [2.0, 2.0, 0.0]);
        assert_eq!(expected_values(1), [30.0, 6.0, 8.0]);
        // Second pass: c=30, b=90, c=120, a=90+360=450.
        assert_eq!(expected_values(2), [450.0, 90.0, 120.0]);
    }

    #[test]
    fn parts_cover_the_array_and_differ_by_at_most_one() {
        let members: Vec<Member> = (0..7).map(|cpu| Member { cpu, mem_node: 0 }).collect();
        let plan = StreamPlan {
            members,
            array_elements: 1000,
            ntimes: 10,
            huge_pages: HugePages::Off,
            isa: Isa::Scalar,
            non_temporal: false,
            interleave: None,
        };
        let parts: Vec<usize> = (0..7).map(|t| plan.part(t)).collect();
        assert_eq!(parts.iter().sum::<usize>(), 1000);
        assert!(parts.iter().max().unwrap() - parts.iter().min().unwrap() <= 1);
    }

    #[test]
    fn check_counts_elements_off_by_more_than_epsilon() {
        let want = expected_values(3);
        let mut a = vec![want[0]; 10];
        let mut b = vec![want[1]; 10];
        let mut c = vec![want[2]; 10];
        b[3] *= 1.0 + 1e-10;
        c[0] = 0.0;
        c[9] = want[2] * (1.0 + 1e-15);
        let (errors, _) = check(&[&mut a, &mut b, &mut c], 3);
        assert_eq!(errors, [0, 1, 1]);
    }
}
