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

    /// Whether progress is wanted (not --quiet); lines may be printed even where no
    /// bar is drawn (stderr not a terminal), e.g. a long campaign's log.
    pub fn enabled(&self) -> bool {
        self.enabled
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
