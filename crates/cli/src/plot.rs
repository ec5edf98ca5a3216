//! Compact text plots for the terminal: one series of (x, y) points drawn as `*` on a
//! grid of characters, each axis linear or logarithmic, with vertical `:` marks at
//! chosen x values (for example detected cache boundaries). Plain ASCII, so it reads
//! the same in a terminal, a log file or a CI page.
//!
//! ```text
//!  121 |            :                :            :*****************
//!      |            :                :*************
//! 9.32 |            :                :            :
//!      |            ******************            :
//!  1.2 |************:                :            :
//!      +-------------+------------+------------+------------+-------
//!       4K           64K          1M           16M          256M
//! ```
//!
//! `plot(series, &PlotOptions { log_x: true, log_y: true, marks: &[48e3, 2e6, 32e6],
//! x_label: &size, ..PlotOptions::default() })` drew this latency curve (cut to five
//! rows here); `sweep` draws its curves so, and any other curve (latency against load
//! bandwidth, say) takes the same call with its own axes.

/// How to draw a plot. `PlotOptions::default()` is 64 x 12, both axes linear, no marks.
pub struct PlotOptions<'a> {
    /// Columns of the plotting area; the y labels come on top of this.
    pub width: usize,
    /// Rows of the plotting area.
    pub height: usize,
    /// Logarithmic x axis, ticks at powers of two (points with x <= 0 are left out).
    pub log_x: bool,
    /// Logarithmic y axis (points with y <= 0 are left out).
    pub log_y: bool,
    /// x values to mark with a vertical line of `:` behind the points; marks outside
    /// the points' range are left out.
    pub marks: &'a [f64],
    /// How x values read under the axis (e.g. byte sizes).
    pub x_label: &'a dyn Fn(f64) -> String,
    /// How y values read beside the axis.
    pub y_label: &'a dyn Fn(f64) -> String,
}

impl Default for PlotOptions<'_> {
    fn default() -> Self {
        PlotOptions {
            width: 64,
            height: 12,
            log_x: false,
            log_y: false,
            marks: &[],
            x_label: &number,
            y_label: &number,
        }
    }
}

/// A number with at most three significant digits after the point, trailing zeros
/// dropped: 0.123, 1.23, 12.3, 123, 1234, 20, 1.5.
pub fn number(v: f64) -> String {
    let a = v.abs();
    let decimals = if a >= 100.0 || a == 0.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    let text = format!("{v:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

/// One axis: where values fall once transformed, over `cells` cells.
struct Axis {
    log: bool,
    lo: f64,
    hi: f64,
    cells: usize,
}

impl Axis {
    fn new(values: impl Iterator<Item = f64> + Clone, log: bool, cells: usize) -> Axis {
        let t = |v: f64| if log { v.log2() } else { v };
        let mut lo = values.clone().map(t).fold(f64::INFINITY, f64::min);
        let mut hi = values.map(t).fold(f64::NEG_INFINITY, f64::max);
        if hi - lo < 1e-12 {
            lo -= 1.0;
            hi += 1.0;
        }
        Axis {
            log,
            lo,
            hi,
            cells: cells.max(2),
        }
    }

    fn t(&self, v: f64) -> f64 {
        if self.log {
            v.log2()
        } else {
            v
        }
    }

    /// The cell of a value, if it lies inside the axis.
    fn cell(&self, v: f64) -> Option<usize> {
        let f = (self.t(v) - self.lo) / (self.hi - self.lo);
        (-1e-9..=1.0 + 1e-9)
            .contains(&f)
            .then(|| (f * (self.cells - 1) as f64).round() as usize)
    }

    /// The value at the centre of a cell.
    fn value(&self, cell: usize) -> f64 {
        let t = self.lo + (self.hi - self.lo) * cell as f64 / (self.cells - 1) as f64;
        if self.log {
            t.exp2()
        } else {
            t
        }
    }

    /// Tick values: powers of two every k octaves on a log axis, 1-2-5 steps on a
    /// linear one, at most one per `spacing` cells.
    fn ticks(&self, spacing: usize) -> Vec<f64> {
        let most = (self.cells / spacing).max(2) as f64;
        let span = self.hi - self.lo;
        let step = if self.log {
            *[1.0, 2.0, 4.0, 5.0, 10.0, 20.0]
                .iter()
                .find(|&&k| span / k <= most)
                .unwrap_or(&40.0)
        } else {
            let base = 10f64.powf((span / most).log10().floor());
            [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * base)
                .find(|&s| span / s <= most)
                .unwrap_or(10.0 * base)
        };
        let first = (self.lo / step - 1e-9).ceil() as i64;
        let last = (self.hi / step + 1e-9).floor() as i64;
        (first..=last)
            .map(|k| {
                let t = k as f64 * step;
                if self.log {
                    t.exp2()
                } else {
                    t
                }
            })
            .collect()
    }
}

/// Draws `series` as a text plot: rows of `|`-prefixed cells under y labels, then the
/// x axis with its tick labels. Points that cannot be drawn (not finite, or not
/// positive on a log axis) are left out; with none left, one line says so.
pub fn plot(series: &[(f64, f64)], o: &PlotOptions) -> String {
    let drawable = |v: f64, log: bool| v.is_finite() && (!log || v > 0.0);
    let points: Vec<(f64, f64)> = series
        .iter()
        .copied()
        .filter(|&(x, y)| drawable(x, o.log_x) && drawable(y, o.log_y))
        .collect();
    if points.is_empty() {
        return "(no points to plot)\n".into();
    }
    let xs = Axis::new(points.iter().map(|p| p.0), o.log_x, o.width);
    let ys = Axis::new(points.iter().map(|p| p.1), o.log_y, o.height);
    let mut grid = vec![vec![' '; xs.cells]; ys.cells];
    for col in o
        .marks
        .iter()
        .filter(|m| drawable(**m, o.log_x))
        .filter_map(|&m| xs.cell(m))
    {
        for row in grid.iter_mut() {
            row[col] = ':';
        }
    }
    for &(x, y) in &points {
        if let (Some(c), Some(r)) = (xs.cell(x), ys.cell(y)) {
            grid[ys.cells - 1 - r][c] = '*';
        }
    }
    let labelled = [0, ys.cells / 2, ys.cells - 1];
    let labels: Vec<String> = (0..ys.cells)
        .map(|row| {
            if labelled.contains(&row) {
                (o.y_label)(ys.value(ys.cells - 1 - row))
            } else {
                String::new()
            }
        })
        .collect();
    let w = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
    let mut out = String::new();
    for (label, row) in labels.iter().zip(&grid) {
        let line = format!("{label:>w$} |{}", row.iter().collect::<String>());
        out += line.trim_end();
        out.push('\n');
    }
    out += &x_axis(&xs, o, w);
    out
}

/// The axis line with `+` at each tick, and the tick labels that fit without touching.
fn x_axis(xs: &Axis, o: &PlotOptions, indent: usize) -> String {
    let mut line: Vec<char> = vec!['-'; xs.cells];
    let mut labels: Vec<char> = vec![' '; xs.cells + 16];
    let mut free_from = 0;
    for t in xs.ticks(8) {
        let Some(c) = xs.cell(t) else { continue };
        // The corner already marks column 0.
        if c > 0 {
            line[c] = '+';
        }
        let text: Vec<char> = (o.x_label)(t).chars().collect();
        if c >= free_from && c + text.len() <= labels.len() {
            labels[c..c + text.len()].copy_from_slice(&text);
            free_from = c + text.len() + 1;
        }
    }
    let pad = " ".repeat(indent);
    let labels: String = labels.into_iter().collect();
    format!(
        "{pad} +{}\n{}\n",
        line.into_iter().collect::<String>(),
        format!("{pad}  {labels}").trim_end()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(v: f64) -> String {
        memfabric_model::format_size(v.round() as u64)
    }

    /// A latency curve over 4K..1G with steps at 48K, 2M and 32M.
    fn chase() -> Vec<(f64, f64)> {
        (0..=72)
            .map(|k| {
                let x = 4096.0 * (k as f64 / 4.0).exp2();
                let y = match x {
                    x if x <= 48e3 => 1.2,
                    x if x <= 2e6 => 4.8,
                    x if x <= 32e6 => 38.0,
                    _ => 110.0 + x / 1e8,
                };
                (x, y)
            })
            .collect()
    }

    #[test]
    fn log_log_curve_with_marks() {
        let o = PlotOptions {
            width: 60,
            height: 10,
            log_x: true,
            log_y: true,
            marks: &[48e3, 2e6, 32e6],
            x_label: &size,
            ..PlotOptions::default()
        };
        insta::assert_snapshot!(plot(&chase(), &o));
    }

    #[test]
    fn linear_axes_and_nice_ticks() {
        let series: Vec<(f64, f64)> = (0..=20)
            .map(|i| (i as f64 * 3.5, 80.0 + (i * i) as f64))
            .collect();
        let o = PlotOptions {
            width: 40,
            height: 6,
            ..PlotOptions::default()
        };
        insta::assert_snapshot!(plot(&series, &o));
    }

    #[test]
    fn degenerate_series() {
        let o = PlotOptions {
            width: 10,
            height: 3,
            log_y: true,
            ..PlotOptions::default()
        };
        assert_eq!(plot(&[], &o), "(no points to plot)\n");
        assert_eq!(plot(&[(1.0, -2.0), (f64::NAN, 1.0)], &o), "(no points to plot)\n");
        let one = plot(&[(5.0, 5.0)], &o);
        assert_eq!(one.matches('*').count(), 1, "{one}");
        assert!(one.lines().all(|l| l.len() <= 4 + 2 + 10 + 16), "{one}");
    }

    #[test]
    fn numbers_keep_three_digits() {
        let got: Vec<String> = [0.1234, 1.234, 12.34, 123.4, 1234.5, 0.0, 20.0, 1.5, -0.25]
            .map(number)
            .to_vec();
        assert_eq!(
            got,
            ["0.123", "1.23", "12.3", "123", "1234", "0", "20", "1.5", "-0.25"]
        );
    }
}
