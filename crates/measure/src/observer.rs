//! How a running measurement tells the outside world how far it got. The core never
//! prints; the CLI implements this trait to draw progress on stderr.

pub trait Observer: Sync {
    /// A new phase of `total` steps begins (e.g. one step per matrix cell).
    fn begin(&self, _what: &str, _total: u64) {}
    /// One more step of the current phase is done.
    fn advance(&self, _label: &str) {}
    /// The phase is over.
    fn finish(&self) {}
    /// A monitoring interval was read (`monitor` shows each as it comes).
    fn interval(&self, _i: &memfabric_model::MonitorInterval) {}
    /// Asked between samples; returning true stops the measurement early.
    fn cancelled(&self) -> bool {
        false
    }
}

/// Observes nothing.
pub struct Silent;

impl Observer for Silent {}

/// What a cell reports when a stop was asked for before or during it.
pub fn interrupted<T>() -> memfabric_model::Outcome<T> {
    memfabric_model::Outcome::Skipped {
        reason: "interrupted".into(),
    }
}
