//! The documents of a stream one after another (`cat *.json` gives several), each
//! read only up to a size limit: a document over it is skipped to its end without
//! being kept, so reading holds one document's bytes at most, whatever the file.

use std::io::BufRead;

/// One document's text, or why there is none.
pub type Read = Result<String, String>;

/// Splits a stream at the end of each top-level JSON value (object or array).
pub struct Documents<R> {
    reader: R,
    limit: usize,
    /// After a text that is not JSON, the rest of the stream is not read.
    done: bool,
}

impl<R: BufRead> Documents<R> {
    pub fn new(reader: R, limit: usize) -> Documents<R> {
        Documents {
            reader,
            limit,
            done: false,
        }
    }
}

/// Where the scanner is inside a value.
#[derive(Default)]
struct Scan {
    depth: usize,
    in_string: bool,
    escaped: bool,
    /// Bytes of the value seen so far, kept or not.
    size: usize,
}

impl Scan {
    /// Takes one byte; true when it closed the top-level value.
    fn step(&mut self, b: u8) -> bool {
        self.size += 1;
        if self.in_string {
            match (self.escaped, b) {
                (true, _) => self.escaped = false,
                (false, b'\\') => self.escaped = true,
                (false, b'"') => self.in_string = false,
                _ => {}
            }
            return false;
        }
        match b {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                return self.depth == 0;
            }
            _ => {}
        }
        false
    }
}

fn mib(bytes: usize) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1u32 << 20))
}

impl<R: BufRead> Documents<R> {
    /// Skips whitespace; the first byte of the next value, if any.
    fn start(&mut self) -> std::io::Result<Option<u8>> {
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok(None);
            }
            match buf.iter().position(|b| !b.is_ascii_whitespace()) {
                Some(i) => {
                    let b = buf[i];
                    self.reader.consume(i);
                    return Ok(Some(b));
                }
                None => {
                    let n = buf.len();
                    self.reader.consume(n);
                }
            }
        }
    }

    /// The next value's bytes, kept up to the limit; its whole size.
    fn value(&mut self) -> std::io::Result<(Vec<u8>, usize, bool)> {
        let mut scan = Scan::default();
        let mut kept = Vec::new();
        loop {
            let buf = self.reader.fill_buf()?;
            if buf.is_empty() {
                return Ok((kept, scan.size, false));
            }
            let mut used = buf.len();
            let mut closed = false;
            for (i, &b) in buf.iter().enumerate() {
                if scan.step(b) {
                    used = i + 1;
                    closed = true;
                    break;
                }
            }
            if scan.size <= self.limit {
                kept.extend_from_slice(&buf[..used]);
            } else {
                kept = Vec::new();
            }
            self.reader.consume(used);
            if closed {
                return Ok((kept, scan.size, true));
            }
        }
    }
}

impl<R: BufRead> Iterator for Documents<R> {
    type Item = Read;

    fn next(&mut self) -> Option<Read> {
        if self.done {
            return None;
        }
        let first = match self.start() {
            Ok(Some(b)) => b,
            Ok(None) => return None,
            Err(e) => {
                self.done = true;
                return Some(Err(format!("cannot read it: {e}")));
            }
        };
        if first != b'{' && first != b'[' {
            // Not the start of a document: say what the parser says of it, and stop.
            self.done = true;
            let mut head = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::Read::take(&mut self.reader, 4096), &mut head);
            let e = serde_json::from_slice::<serde::de::IgnoredAny>(&head).err();
            return Some(Err(e.map_or("it is not a JSON document".into(), |e| {
                format!("it is not JSON ({e})")
            })));
        }
        let (kept, size, closed) = match self.value() {
            Ok(v) => v,
            Err(e) => {
                self.done = true;
                return Some(Err(format!("cannot read it: {e}")));
            }
        };
        if size > self.limit {
            return Some(Err(format!(
                "it is {} ({size} bytes), over the limit of {} per document (--max-document-size)",
                mib(size),
                mib(self.limit)
            )));
        }
        // A value cut short (the stream ended inside it) is handed over as it is:
        // the parser names what is missing.
        self.done |= !closed;
        Some(String::from_utf8(kept).map_err(|e| format!("it is not UTF-8 text ({e})")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(text: &str, limit: usize) -> Vec<Read> {
        Documents::new(std::io::BufReader::with_capacity(7, text.as_bytes()), limit).collect()
    }

    #[test]
    fn documents_one_after_another_are_split_at_their_ends() {
        let docs = split("{\"a\": \"}{\\\"\"}\n  [1, {\"b\": [2]}]{\"c\":", 1000);
        assert_eq!(docs[0], Ok("{\"a\": \"}{\\\"\"}".into()));
        assert_eq!(docs[1], Ok("[1, {\"b\": [2]}]".into()));
        assert_eq!(docs[2], Ok("{\"c\":".into()), "cut short: the parser says why");
        assert_eq!(docs.len(), 3);
        assert!(split("  \n", 10).is_empty());
    }

    #[test]
    fn a_document_over_the_limit_is_skipped_with_its_size_and_the_next_is_read() {
        let big = format!("{{\"x\": \"{}\"}}", "y".repeat(3 << 20));
        let docs = split(&format!("{big}\n{{\"ok\": 1}}"), 1 << 20);
        assert_eq!(
            docs[0],
            Err(format!(
                "it is 3.0 MiB ({} bytes), over the limit of 1.0 MiB per document (--max-document-size)",
                big.len()
            ))
        );
        assert_eq!(docs[1], Ok("{\"ok\": 1}".into()));
    }

    #[test]
    fn text_that_is_not_json_is_named_and_ends_the_stream() {
        let docs = split("Segmentation fault\n{\"a\": 1}", 100);
        assert_eq!(docs.len(), 1);
        assert!(
            docs[0].as_ref().is_err_and(|e| e.starts_with("it is not JSON (")),
            "{docs:?}"
        );
    }
}
