//! Plain aligned text tables for the terminal.

/// Column alignment: labels left, numbers right.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Text as it may reach a terminal: control characters (escape sequences,
/// newlines, tabs) written as Rust escapes (`\u{1b}`, `\n`), the rest as it is.
pub fn printable(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

pub struct Table {
    header: Vec<String>,
    align: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// Columns whose header starts with '<' are left-aligned (the '<' is dropped);
    /// all others are right-aligned.
    pub fn new(header: &[&str]) -> Table {
        let align = header
            .iter()
            .map(|h| {
                if h.starts_with('<') {
                    Align::Left
                } else {
                    Align::Right
                }
            })
            .collect();
        Table {
            header: header
                .iter()
                .map(|h| h.trim_start_matches('<').to_string())
                .collect(),
            align,
            rows: Vec::new(),
        }
    }

    /// The same table with one more (right-aligned) column at the end.
    pub fn with_column(mut self, header: &str) -> Table {
        self.header.push(header.to_string());
        self.align.push(Align::Right);
        self
    }

    /// A row; control characters in a cell (a label or host name with an escape
    /// sequence or a newline) are shown escaped, never sent to the terminal.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells.iter().map(|c| printable(c)).collect());
    }

    pub fn render(&self) -> String {
        let cols = self.header.len();
        let mut width: Vec<usize> = self.header.iter().map(|h| h.chars().count()).collect();
        for row in &self.rows {
            for (w, cell) in width.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let line = |cells: &[String]| {
            let parts: Vec<String> = (0..cols)
                .map(|i| {
                    let cell = cells.get(i).map(String::as_str).unwrap_or("");
                    match self.align[i] {
                        Align::Left => format!("{cell:<w$}", w = width[i]),
                        Align::Right => format!("{cell:>w$}", w = width[i]),
                    }
                })
                .collect();
            parts.join("  ").trim_end().to_string() + "\n"
        };
        let mut out = line(&self.header);
        for row in &self.rows {
            out += &line(row);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns() {
        let mut t = Table::new(&["<name", "value"]);
        t.row(vec!["a".into(), "1.5".into()]);
        t.row(vec!["long name".into(), "100.25".into()]);
        assert_eq!(
            t.render(),
            "name        value\na             1.5\nlong name  100.25\n"
        );
    }
}
