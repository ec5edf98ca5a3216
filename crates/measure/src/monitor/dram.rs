//! DRAM traffic over a measurement's timed rounds: the counters are read at the
//! team's round edges (while no member runs), from just before the first timed
//! round to just after the last, so first touch, warm-up and validation are not
//! counted. The counted bytes are set beside the bytes the program moved.

use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

use memfabric_model::{DramCounting, DramTraffic, MonitorInterval};

use super::{discover, missing, read_pmus, Access, Candidate, CounterSource, Live, Monitor};
use crate::team::Edge;

/// A counter source chosen for attaching DRAM traffic to measurements.
pub struct DramCounters {
    name: String,
    specs: Vec<super::CounterSpec>,
    source: Mutex<Box<dyn CounterSource + Send>>,
    /// Why counting failed, where it did, once per distinct reason.
    failures: Mutex<Vec<String>>,
}

impl std::fmt::Debug for DramCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DramCounters")
            .field("name", &self.name)
            .field("counters", &self.specs.len())
            .finish()
    }
}

impl DramCounters {
    pub fn new(candidate: &Candidate, source: Box<dyn CounterSource + Send>) -> DramCounters {
        DramCounters {
            name: candidate.name.to_string(),
            specs: candidate.specs.clone(),
            source: Mutex::new(source),
            failures: Mutex::new(Vec::new()),
        }
    }

    /// Why counting failed during the measurements, where it did.
    pub fn failures(&self) -> Vec<String> {
        self.failures.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn failed(&self, e: super::MonitorError) -> State {
        let mut f = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        let e = e.to_string();
        if !f.contains(&e) {
            f.push(e);
        }
        State::Nothing
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The first source found under `sysfs` and `resctrl` whose counters open, and
    /// what the result should say: which source and why, or why none.
    pub fn find(sysfs: &Path, resctrl: &Path, proc_root: &Path) -> (Option<DramCounters>, DramCounting) {
        let candidates = discover(sysfs, resctrl);
        let (chosen, tried) = open_first(&candidates);
        match chosen {
            Some((c, mut live, _)) => {
                live.close();
                let reason = chosen_because(c, &candidates);
                (
                    Some(DramCounters::new(c, Box::new(Live::default()))),
                    DramCounting {
                        source: Some(c.name.to_string()),
                        reason,
                    },
                )
            }
            None => {
                let pmus: Vec<String> = read_pmus(sysfs).into_iter().map(|p| p.name).collect();
                let mut why = tried;
                why.extend(missing(&candidates, &Access::read(proc_root), resctrl, &pmus));
                (
                    None,
                    DramCounting {
                        source: None,
                        reason: format!("no memory-traffic counters: {}", why.join("; ")),
                    },
                )
            }
        }
    }

    /// A window that counts from before round `first` to the end.
    pub fn window(&self, first: usize) -> Window<'_> {
        Window {
            counters: self,
            first,
            state: Mutex::new(State::Waiting),
        }
    }
}

/// The first source whose counters open, with its first reading taken; the
/// failures of those tried before it.
pub fn open_first(candidates: &[Candidate]) -> (Option<(&Candidate, Live, Monitor)>, Vec<String>) {
    let mut tried = Vec::new();
    for c in candidates.iter().filter(|c| !c.specs.is_empty()) {
        let mut live = Live::default();
        match Monitor::start(c.specs.clone(), &mut live) {
            Ok(m) => return (Some((c, live, m)), tried),
            Err(e) => {
                live.close();
                tried.push(format!("{} found but not usable: {e}", c.name));
            }
        }
    }
    (None, tried)
}

/// Why `chosen` of `candidates`: the first available, in order of preference.
pub fn chosen_because(chosen: &Candidate, candidates: &[Candidate]) -> String {
    format!(
        "{}: the first available of {} ({})",
        chosen.name,
        candidates.iter().map(|c| c.name).collect::<Vec<_>>().join(", "),
        chosen.detail
    )
}

enum State {
    Waiting,
    Counting {
        monitor: Monitor,
        since: Instant,
    },
    Done {
        interval: MonitorInterval,
        rounds: usize,
        window_s: f64,
    },
    /// The counters failed or no timed round ran: nothing to attach.
    Nothing,
}

/// One measurement's counting, driven by the team's round edges.
pub struct Window<'a> {
    counters: &'a DramCounters,
    first: usize,
    state: Mutex<State>,
}

impl Window<'_> {
    /// To be called at every edge of the team's rounds ([`crate::team::run_with_edges`]).
    pub fn edge(&self, e: Edge) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut source = self.counters.source.lock().unwrap_or_else(|p| p.into_inner());
        let next = match (std::mem::replace(&mut *state, State::Nothing), e) {
            (State::Waiting, Edge::Before(r)) if r == self.first => {
                match Monitor::start(self.counters.specs.clone(), source.as_mut()) {
                    Ok(monitor) => State::Counting {
                        monitor,
                        since: Instant::now(),
                    },
                    Err(e) => self.counters.failed(e),
                }
            }
            (State::Counting { mut monitor, since }, Edge::End(ran)) if ran > self.first => {
                let window_s = since.elapsed().as_secs_f64();
                let read = monitor.sample(source.as_mut(), window_s).map(|_| ());
                source.close();
                match read {
                    Ok(()) => State::Done {
                        interval: monitor.finish().total,
                        rounds: ran - self.first,
                        window_s,
                    },
                    Err(e) => self.counters.failed(e),
                }
            }
            (State::Counting { .. }, Edge::End(_)) => {
                source.close();
                State::Nothing
            }
            (s, _) => s,
        };
        *state = next;
    }

    /// The traffic counted, beside the program's bytes per round; None where nothing
    /// was counted (the counters failed, or no timed round ran).
    pub fn traffic(self, program_read_per_round: u64, program_write_per_round: u64) -> Option<DramTraffic> {
        let state = self.state.into_inner().unwrap_or_else(|p| p.into_inner());
        let State::Done {
            interval,
            rounds,
            window_s,
        } = state
        else {
            return None;
        };
        Some(
            DramTraffic {
                source: self.counters.name.clone(),
                rounds,
                window_s,
                sockets: interval.sockets,
                system: interval.system,
                program_read_bytes: program_read_per_round * rounds as u64,
                program_write_bytes: program_write_per_round * rounds as u64,
                ratio: None,
                read_ratio: None,
                write_ratio: None,
            }
            .with_ratios(),
        )
    }
}

/// Where a bandwidth measurement counts DRAM traffic from (--dram-counters).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DramSource {
    Off,
    /// The first counter source found under these roots, if any.
    Auto {
        sysfs: std::path::PathBuf,
        resctrl: std::path::PathBuf,
        proc_root: std::path::PathBuf,
    },
}

impl DramSource {
    /// The counter source, opened, and what the result says about it.
    pub fn open(&self) -> (Option<DramCounters>, DramCounting) {
        match self {
            DramSource::Off => (
                None,
                DramCounting {
                    source: None,
                    reason: "not counted: --dram-counters off".into(),
                },
            ),
            DramSource::Auto {
                sysfs,
                resctrl,
                proc_root,
            } => DramCounters::find(sysfs, resctrl, proc_root),
        }
    }
}

/// `counting`, with why counting failed during the measurements where it did.
pub fn finish_counting(mut counting: DramCounting, counters: Option<&DramCounters>) -> DramCounting {
    let failures = counters.map(DramCounters::failures).unwrap_or_default();
    if !failures.is_empty() {
        counting.reason += &format!("; counting failed: {}", failures.join("; "));
    }
    counting
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use memfabric_model::{HugePages, Mix, Outcome};

    use super::*;
    use crate::bandwidth::{measure_passes, KernelOptions};
    use crate::kernels::Isa;
    use crate::monitor::{discover, Replay};
    use crate::observer::Observer;
    use crate::sys::current_affinity;
    use crate::team::{run_with_edges, Member};

    struct Quiet;
    impl Observer for Quiet {}

    /// The Intel SPR fixture's counters: 4 IMCs x (read, write) x 2 sockets, 64 B each.
    fn intel() -> Candidate {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/event_source/intel-spr");
        let c = discover(&root.join("sys"), &root.join("resctrl"));
        c.into_iter().find(|c| c.name == "intel-imc").expect("fixture")
    }

    fn members(n: usize) -> Vec<Member> {
        let cpu = current_affinity().unwrap()[0];
        vec![Member { cpu, mem_node: 0 }; n]
    }

    const KERNEL: KernelOptions = KernelOptions {
        isa: Isa::Scalar,
        array_bytes: 1 << 20,
        huge_pages: HugePages::Off,
        samples: 3,
    };

    #[test]
    fn edges_come_between_rounds_in_order_once_each() {
        let running = AtomicUsize::new(0);
        let seen = Mutex::new(Vec::new());
        let round = |_: &mut (), _: usize| {
            running.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(2));
            running.fetch_sub(1, Ordering::SeqCst);
        };
        let edge = |e: Edge| {
            assert_eq!(running.load(Ordering::SeqCst), 0, "a member ran during {e:?}");
            seen.lock().unwrap().push(e);
        };
        let out = run_with_edges(&members(3), 4, &Quiet, &|_| Ok(()), &round, &|_, n| Ok(n), &edge);
        assert!(out.iter().all(|r| matches!(r, Ok((4, t)) if t.len() == 4)));
        let seen = seen.into_inner().unwrap();
        let want: Vec<Edge> = (0..4).map(Edge::Before).chain([Edge::End(4)]).collect();
        assert_eq!(seen, want);
    }

    #[test]
    fn a_failed_setup_ends_before_the_first_round() {
        let seen = Mutex::new(Vec::new());
        let setup = |m: Member| {
            if m.mem_node == 1 {
                Err("no".to_string())
            } else {
                Ok(())
            }
        };
        let mut m = members(2);
        m[1].mem_node = 1;
        let out = run_with_edges(&m, 4, &Quiet, &setup, &|_, _| {}, &|_, n| Ok(n), &|e| {
            seen.lock().unwrap().push(e)
        });
        assert!(out[1].is_err());
        assert_eq!(seen.into_inner().unwrap(), vec![Edge::End(0)]);
    }

    /// Reads 1 at the first edge, then per counter: reads 100 + k CAS, writes 50 + k.
    fn replay(c: &Candidate) -> Replay {
        let first = vec![Some(1_000); c.specs.len()];
        let second = c
            .specs
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let more = if s.dir == super::super::Dir::Read { 100 } else { 50 };
                Some(1_000 + more + k as u64)
            })
            .collect();
        Replay::new(vec![first, second])
    }

    #[test]
    fn counted_traffic_sits_beside_the_programs_bytes() {
        let _turn = crate::measuring();
        let c = intel();
        let counters = DramCounters::new(&c, Box::new(replay(&c)));
        let m = members(2);
        let Outcome::Ok(v) = measure_passes(Mix::Copy, &m, &KERNEL, 1, Some(&counters), &Quiet) else {
            panic!("copy failed")
        };
        let d = v.dram.expect("counted");
        assert_eq!((d.source.as_str(), d.rounds), ("intel-imc", 3));
        // Copy reads one array and writes one, 1 MiB each per thread, 3 samples.
        let per_array = 2 * (1u64 << 20) * 3;
        assert_eq!(
            (d.program_read_bytes, d.program_write_bytes),
            (per_array, per_array)
        );
        assert_eq!(
            d.program_read_bytes + d.program_write_bytes,
            v.bytes_per_sample * 3
        );
        let sum = |dir| -> u64 {
            let counts = c.specs.iter().enumerate().filter(|(_, s)| s.dir == dir);
            counts.map(|(k, _)| k as u64).sum::<u64>() * 64
        };
        let reads = sum(super::super::Dir::Read) + 8 * 100 * 64;
        let writes = sum(super::super::Dir::Write) + 8 * 50 * 64;
        assert_eq!(d.system.read_bytes, Some(reads));
        assert_eq!(d.system.write_bytes, Some(writes));
        assert_eq!(d.system.total_bytes, reads + writes);
        assert_eq!(d.sockets.len(), 2);
        assert_eq!(
            d.sockets.iter().map(|s| s.total_bytes).sum::<u64>(),
            reads + writes
        );
        let close = |a: Option<f64>, b: f64| (a.unwrap() - b).abs() < 1e-12;
        assert!(close(d.read_ratio, reads as f64 / per_array as f64));
        assert!(close(d.write_ratio, writes as f64 / per_array as f64));
        assert!(close(d.ratio, (reads + writes) as f64 / (2 * per_array) as f64));
        assert!(d.window_s > 0.0 && d.system.total_gb_s > 0.0);
        assert!(counters.failures().is_empty());
    }

    #[test]
    fn a_read_only_mix_has_no_write_ratio() {
        let _turn = crate::measuring();
        let c = intel();
        let counters = DramCounters::new(&c, Box::new(replay(&c)));
        let Outcome::Ok(v) = measure_passes(Mix::Read, &members(1), &KERNEL, 1, Some(&counters), &Quiet)
        else {
            panic!("read failed")
        };
        let d = v.dram.expect("counted");
        assert_eq!(d.program_write_bytes, 0);
        assert!(d.write_ratio.is_none() && d.read_ratio.is_some());
    }

    #[test]
    fn failing_counters_leave_the_bandwidth_and_say_why() {
        let _turn = crate::measuring();
        let c = intel();
        // One reading only: the one after the last round is missing.
        let short = Replay::new(vec![vec![Some(0); c.specs.len()]]);
        let counters = DramCounters::new(&c, Box::new(short));
        let Outcome::Ok(v) = measure_passes(Mix::Read, &members(1), &KERNEL, 1, Some(&counters), &Quiet)
        else {
            panic!("read failed")
        };
        assert!(v.dram.is_none());
        assert_eq!(v.samples_gb_s.len(), 3);
        assert_eq!(
            counters.failures(),
            vec!["the recording has no more readings".to_string()]
        );
    }

    #[test]
    fn no_source_here_says_what_is_missing() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/event_source/none");
        let (c, counting) = DramCounters::find(
            &root.join("sys"),
            &root.join("resctrl"),
            &memfabric_topo::Roots::live().proc,
        );
        assert!(c.is_none() && counting.source.is_none());
        assert!(
            counting.reason.starts_with("no memory-traffic counters: ")
                && counting.reason.contains("mount -t resctrl"),
            "{}",
            counting.reason
        );
    }
}
