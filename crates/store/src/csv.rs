//! Tidy CSV: one figure per row, one column per dimension, so pandas or a spreadsheet
//! reads it directly (`pd.read_csv`), with no reshaping.

use std::collections::BTreeSet;

use memfabric_model::Figure;

/// Quotes a field when it holds a comma, a quote or a line break (RFC 4180).
pub fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn number(x: Option<f64>) -> String {
    x.map_or(String::new(), |v| v.to_string())
}

/// The figures of one run as CSV with a header row. Columns: run_id, measurement, every
/// dimension any figure has (empty where a figure lacks it), metric, unit, value, min,
/// max, cv, samples.
pub fn figures_csv(run_id: i64, figures: &[Figure]) -> String {
    let dims: BTreeSet<&str> = figures
        .iter()
        .flat_map(|f| f.dims.keys().map(String::as_str))
        .collect();
    let mut header = vec!["run_id", "measurement"];
    header.extend(dims.iter().copied());
    header.extend(["metric", "unit", "value", "min", "max", "cv", "samples"]);
    let mut out: String = header.iter().map(|h| field(h)).collect::<Vec<_>>().join(",") + "\n";
    for f in figures {
        let mut row = vec![run_id.to_string(), field(&f.measurement)];
        row.extend(
            dims.iter()
                .map(|d| field(f.dims.get(*d).map_or("", String::as_str))),
        );
        row.extend([
            field(&f.metric),
            field(f.unit()),
            f.value.to_string(),
            number(f.min),
            number(f.max),
            number(f.cv),
            f.samples.to_string(),
        ]);
        out += &row.join(",");
        out += "\n";
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A strict RFC 4180 reader for the test: fields, quotes, doubled quotes.
    fn parse(text: &str) -> Vec<Vec<String>> {
        let mut rows = vec![];
        let mut row = vec![];
        let mut cur = String::new();
        let mut quoted = false;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match (quoted, c) {
                (true, '"') if chars.peek() == Some(&'"') => {
                    cur.push('"');
                    chars.next();
                }
                (true, '"') => quoted = false,
                (true, c) => cur.push(c),
                (false, '"') => quoted = true,
                (false, ',') => row.push(std::mem::take(&mut cur)),
                (false, '\n') => {
                    row.push(std::mem::take(&mut cur));
                    rows.push(std::mem::take(&mut row));
                }
                (false, c) => cur.push(c),
            }
        }
        rows
    }

    proptest! {
        /// Whatever the dimension names and values, the CSV reads back to the same
        /// table: one header, one row per figure, every row as wide as the header.
        #[test]
        fn reads_back_cell_for_cell(
            figs in prop::collection::vec(
                (prop::collection::btree_map("d_[a-z]{1,5}", "[ -~\n]{0,8}", 0..4), "[a-z_]{1,8}", -1e6f64..1e6),
                0..40,
            )
        ) {
            let figures: Vec<Figure> = figs.iter().map(|(dims, metric, v)| Figure {
                measurement: "m,x".into(),
                dims: dims.clone(),
                metric: metric.clone(),
                value: *v,
                min: None,
                max: Some(*v),
                cv: None,
                samples: 3,
            }).collect();
            let rows = parse(&figures_csv(7, &figures));
            prop_assert_eq!(rows.len(), figures.len() + 1);
            let header = &rows[0];
            prop_assert!(rows.iter().all(|r| r.len() == header.len()));
            for (f, row) in figures.iter().zip(&rows[1..]) {
                prop_assert_eq!(&row[0], "7");
                prop_assert_eq!(&row[1], "m,x");
                for (name, cell) in header.iter().zip(row) {
                    if let Some(v) = f.dims.get(name) {
                        prop_assert_eq!(cell, v);
                    }
                }
                let value: f64 = row[header.iter().position(|h| h == "value").unwrap()].parse().unwrap();
                prop_assert_eq!(value, f.value);
            }
        }
    }
}
