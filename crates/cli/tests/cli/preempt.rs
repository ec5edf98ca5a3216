//! A chase whose thread loses its CPU times the scheduler, not the memory: such
//! samples are taken again, and those kept are counted and named in the noise note.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::Value;

use super::{measuring, memfabric};

/// A thread of this test process spinning on `cpu` until dropped: it takes half of
/// that CPU from anything else pinned there.
struct Hog {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hog {
    fn on(cpu: u32) -> Hog {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            memfabric_measure::placement::pin(cpu).expect("the spinning thread pinned");
            while !flag.load(Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        });
        Hog {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Hog {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn samples_that_lost_the_cpu_are_retaken_then_counted() {
    let _turn = measuring();
    let hog = Hog::on(0);
    let out = memfabric()
        .args(["latency", "--cpu", "0", "--size", "64K", "--samples", "10"])
        .args(["--sample-ms", "20", "--json"])
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    drop(hog);
    let v: Value = serde_json::from_slice(&out).unwrap();
    let m = &v["result"]["cells"][0]["outcome"];
    let retaken = m["samples_retaken"].as_u64().unwrap();
    let kept = m["samples_preempted"].as_u64().unwrap();
    assert_eq!(m["samples_ns"].as_array().unwrap().len(), 10, "{m}");
    // Sharing CPU 0 with a spinning thread, the chase cannot keep it through ten
    // 20 ms samples: the scheduler's slices are a few ms.
    assert!(
        retaken >= 1,
        "no sample retaken beside a thread spinning on CPU 0: {m}"
    );
    assert!(retaken <= 10, "more retakes than samples: {m}");
    if kept > 0 {
        let cause = m["noise"]["likely_causes"][0].as_str().unwrap_or_default();
        assert!(cause.starts_with("the measuring thread lost its CPU"), "{m}");
        assert!(
            cause.contains(&format!("in {kept} of 10 samples after {retaken} retakes")),
            "{m}"
        );
    }
}
