//! Progress on stderr, drawn only when stderr is a terminal; stdout carries results.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use memfabric_measure::Observer;
use std::sync::Mutex;

pub struct Progress {
    bar: Mutex<Option<ProgressBar>>,
    enabled: bool,
}

impl Progress {
    pub fn new(enabled: bool) -> Progress {
        Progress {
            bar: Mutex::new(None),
            enabled,
        }
    }
}

impl Observer for Progress {
    fn begin(&self, what: &str, total: u64) {
        if !self.enabled {
            return;
        }
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        bar.set_style(
            ProgressStyle::with_template("{prefix:>10} [{bar:30}] {pos}/{len} {msg} ({elapsed})")
                .expect("valid template")
                .progress_chars("=> "),
        );
        bar.set_prefix(what.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        *self.bar.lock().expect("progress lock") = Some(bar);
    }

    fn advance(&self, label: &str) {
        if let Some(bar) = self.bar.lock().expect("progress lock").as_ref() {
            bar.set_message(label.to_string());
            bar.inc(1);
        }
    }

    fn cancelled(&self) -> bool {
        memfabric_measure::sys::stop_signal().is_some()
    }

    fn finish(&self) {
        if let Some(bar) = self.bar.lock().expect("progress lock").take() {
            bar.finish_and_clear();
        }
    }
}

/// The fleet's work drawn as the measurements' is; a campaign's counts as one line
/// each, since a campaign outlasts whoever started it watching, and its log is read
/// later.
impl memfabric_fleet::Observer for Progress {
    fn note(&self, line: &str) {
        eprintln!("memfabric: {line}");
    }

    fn begin(&self, what: &str, total: u64) {
        Observer::begin(self, what, total);
    }

    fn advance(&self, label: &str) {
        Observer::advance(self, label);
    }

    fn finish(&self) {
        Observer::finish(self);
    }

    fn campaign(&self, p: &memfabric_fleet::CampaignProgress) {
        if !self.enabled {
            return;
        }
        let left = p
            .left_s
            .map_or("unknown".to_string(), |s| format!("about {s:.0} s"));
        let news = if p.news.is_empty() {
            String::new()
        } else {
            format!(": {}", p.news)
        };
        eprintln!(
            "[fleet {}] {}/{} done ({} failed), {} running, {} waiting; {:.0} s elapsed, {left} left{news}",
            p.campaign, p.done, p.total, p.failed, p.running, p.waiting, p.elapsed_s
        );
    }

    fn stop_signal(&self) -> Option<i32> {
        memfabric_measure::sys::stop_signal()
    }
}
