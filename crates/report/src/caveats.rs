//! What the terminal says beside a section's figures, said on the page too: how the
//! figures were taken (sizes, pages, kernel, threads), and every caveat the result
//! records (noise, placement that could not be verified, a working set that fits
//! in cache, cells that failed). A page without them would show two "read" figures
//! of different methods side by side, unexplained.

use memfabric_model::Document;
use serde_json::Value;

use crate::svg::esc;

/// Result fields that say how a figure was taken, as the page names them.
const SETUP: [&str; 14] = [
    "pattern",
    "huge_pages",
    "size_bytes",
    "stride_bytes",
    "window_bytes",
    "array_bytes_per_thread",
    "array_elements",
    "chase_size_bytes",
    "kernel",
    "thread_counts",
    "samples",
    "round_trips_per_sample",
    "min_bytes",
    "max_bytes",
];

fn shown(v: &Value, key: &str) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Array(a) if a.is_empty() => None,
        Value::Number(n) if key.contains("bytes") => n.as_u64().map(memfabric_model::format_size),
        Value::String(s) => Some(s.clone()),
        v => Some(v.to_string()),
    }
}

/// One line: how this section's figures were taken (`v`: the result as JSON).
pub fn setup(v: &Value) -> String {
    let parts: Vec<String> = SETUP
        .iter()
        .filter_map(|k| {
            let name = k.replace("_bytes", "").replace('_', " ");
            Some(format!("{name} {}", shown(v.get(*k)?, k)?))
        })
        .collect();
    if parts.is_empty() {
        return String::new();
    }
    format!(
        "<p class=\"meta setup\">Taken with: {}</p>",
        esc(&parts.join("; "))
    )
}

/// Every placement in the result that could not be verified, with how it was tried.
fn unverified(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(p) = m.get("placement").filter(|p| p["verified"] == false) {
                let method = p["method"].as_str().unwrap_or("no method recorded");
                let line = format!("placement not verified: {method}");
                if !out.contains(&line) {
                    out.push(line);
                }
            }
            m.values().for_each(|x| unverified(x, out));
        }
        Value::Array(a) => a.iter().for_each(|x| unverified(x, out)),
        _ => {}
    }
}

/// The caveats of a section, as a list; empty where there are none (`v`: the
/// result as JSON).
pub fn caveats(doc: &Document, v: &Value) -> String {
    let mut items: Vec<String> = Vec::new();
    items.extend(v.get("cache_caveat").and_then(Value::as_str).map(str::to_string));
    if let Some(p) = v.get("peak_unknown").and_then(Value::as_str) {
        items.push(format!("no share of the theoretical peak: {p}"));
    }
    unverified(v, &mut items);
    items.extend(
        doc.failures()
            .into_iter()
            .map(|f| format!("{} failed: {}", f.cell, f.reason)),
    );
    let noise = doc.noise_flags();
    if !noise.is_empty() {
        items.push(format!(
            "noise guard: {} measurement(s) flagged; the first: {}",
            noise.len(),
            noise[0]
        ));
    }
    if items.is_empty() {
        return String::new();
    }
    let li: String = items.iter().map(|i| format!("<li>{}</li>", esc(i))).collect();
    format!("<ul class=\"caveats\">{li}</ul>")
}
