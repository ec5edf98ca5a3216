//! Hand-written SVG: a heatmap with a colour legend and a line chart. Plain markup, no
//! script: a `<title>` on each cell or point is the hover text.

use std::fmt::Write;

/// Escapes text for XML content and attribute values.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Stops of the colour scale (a perceptually ordered dark-blue to yellow ramp).
const RAMP: [(u8, u8, u8); 5] = [
    (68, 1, 84),
    (59, 82, 139),
    (33, 145, 140),
    (94, 201, 98),
    (253, 231, 37),
];

/// The colour of t in [0, 1] along the ramp.
pub fn colour(t: f64) -> String {
    let t = if t.is_finite() { t.clamp(0.0, 1.0) } else { 0.0 };
    let x = t * (RAMP.len() - 1) as f64;
    let i = (x.floor() as usize).min(RAMP.len() - 2);
    let f = x - i as f64;
    let mix = |a: u8, b: u8| (f64::from(a) + (f64::from(b) - f64::from(a)) * f).round() as u8;
    let (a, b) = (RAMP[i], RAMP[i + 1]);
    format!("#{:02x}{:02x}{:02x}", mix(a.0, b.0), mix(a.1, b.1), mix(a.2, b.2))
}

/// Text colour that stays readable on a cell of colour t.
fn ink(t: f64) -> &'static str {
    if t > 0.6 {
        "#000"
    } else {
        "#fff"
    }
}

pub struct Heatmap<'a> {
    pub title: &'a str,
    pub row_label: &'a str,
    pub col_label: &'a str,
    pub rows: Vec<String>,
    pub cols: Vec<String>,
    /// values[row][col]; None draws an empty cell.
    pub values: Vec<Vec<Option<f64>>>,
    pub unit: &'a str,
    pub decimals: usize,
}

impl Heatmap<'_> {
    pub fn render(&self) -> String {
        let cell = if self.cols.len() > 16 { 28.0 } else { 56.0 };
        let (left, top) = (70.0, 50.0);
        let width = left + cell * self.cols.len() as f64 + 110.0;
        let height = top + cell * self.rows.len() as f64 + 30.0;
        let finite: Vec<f64> = self
            .values
            .iter()
            .flatten()
            .flatten()
            .copied()
            .filter(|v| v.is_finite())
            .collect();
        let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let t_of = |v: f64| if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="heatmap" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" role="img" aria-label="{t}"><title>{t}</title>"#,
            t = esc(self.title)
        );
        let _ = write!(
            s,
            r#"<text x="{left}" y="16" class="axis">{} → ({})</text><text x="4" y="{}" class="axis">{} ↓</text>"#,
            esc(self.col_label),
            esc(self.unit),
            top - 8.0,
            esc(self.row_label)
        );
        for (j, c) in self.cols.iter().enumerate() {
            let x = left + cell * (j as f64 + 0.5);
            let _ = write!(
                s,
                r#"<text x="{x:.1}" y="{:.1}" class="tick" text-anchor="middle">{}</text>"#,
                top - 6.0,
                esc(c)
            );
        }
        for (i, r) in self.rows.iter().enumerate() {
            let y = top + cell * i as f64;
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{}</text>"#,
                left - 6.0,
                y + cell / 2.0 + 4.0,
                esc(r)
            );
            for (j, c) in self.cols.iter().enumerate() {
                let x = left + cell * j as f64;
                let v = self.values.get(i).and_then(|row| row.get(j)).copied().flatten();
                s += &self.cell((r, c), (x, y, cell), v.map(|v| (v, t_of(v))));
            }
        }
        let id = format!("ramp-{:016x}", fnv1a(self.title));
        s += &legend(
            &id,
            left + cell * self.cols.len() as f64 + 20.0,
            top,
            cell * self.rows.len().max(2) as f64,
            (lo, hi),
            self.unit,
        );
        s += "</svg>";
        s
    }
}

impl Heatmap<'_> {
    /// One cell at (x, y) of side `size`: its colour, its value (where it fits) and
    /// a tooltip; grey where there is no value. `v` is the value and its place in the
    /// colour ramp.
    fn cell(&self, (r, c): (&str, &str), (x, y, size): (f64, f64, f64), v: Option<(f64, f64)>) -> String {
        let Some((v, t)) = v else {
            return format!(
                r##"<rect x="{x:.1}" y="{y:.1}" width="{size}" height="{size}" fill="#eee"><title>no value</title></rect>"##
            );
        };
        let text = format!("{v:.*}", self.decimals);
        let mut s = format!(
            r#"<g><title>{} {r} → {} {c}: {text} {}</title><rect x="{x:.1}" y="{y:.1}" width="{size}" height="{size}" fill="{}"/>"#,
            esc(self.row_label),
            esc(self.col_label),
            esc(self.unit),
            colour(t)
        );
        if size >= 40.0 {
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" class="val" text-anchor="middle" fill="{}">{text}</text>"#,
                x + size / 2.0,
                y + size / 2.0 + 4.0,
                ink(t)
            );
        }
        s + "</g>"
    }
}

/// A stable id from a title, so several heatmaps in one page keep distinct gradients.
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

/// A vertical colour bar from lo (bottom) to hi (top), labelled at both ends.
fn legend(id: &str, x: f64, y: f64, h: f64, (lo, hi): (f64, f64), unit: &str) -> String {
    if !(lo.is_finite() && hi.is_finite()) {
        return String::new();
    }
    let mut s = format!(r#"<defs><linearGradient id="{id}" x1="0" y1="1" x2="0" y2="0">"#);
    for k in 0..RAMP.len() {
        let t = k as f64 / (RAMP.len() - 1) as f64;
        let _ = write!(
            s,
            r#"<stop offset="{:.0}%" stop-color="{}"/>"#,
            t * 100.0,
            colour(t)
        );
    }
    s += "</linearGradient></defs>";
    let _ = write!(
        s,
        r##"<rect x="{x:.1}" y="{y:.1}" width="14" height="{h:.1}" fill="url(#{id})" stroke="#999"/><text x="{:.1}" y="{:.1}" class="tick">{hi:.1}</text><text x="{:.1}" y="{:.1}" class="tick">{lo:.1}</text><text x="{:.1}" y="{:.1}" class="tick">{}</text>"##,
        x + 18.0,
        y + 10.0,
        x + 18.0,
        y + h,
        x,
        y - 8.0,
        esc(unit)
    );
    s
}

/// One named line of (x, y) points.
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

pub struct LineChart<'a> {
    pub title: &'a str,
    pub x_label: &'a str,
    pub y_label: &'a str,
    pub series: Vec<Series>,
    pub log2_x: bool,
    /// Vertical marks at these x values, each with a label (detected levels...).
    pub marks: Vec<(f64, String)>,
}

const COLOURS: [&str; 6] = ["#3b528b", "#e4572e", "#21918c", "#7a5195", "#ffa600", "#444"];

/// Where a chart's values land on the page: the plot area and the data ranges.
struct Frame {
    w: f64,
    h: f64,
    left: f64,
    top: f64,
    right: f64,
    bottom: f64,
    log2_x: bool,
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Frame {
    fn fx(&self, x: f64) -> f64 {
        if self.log2_x {
            x.max(f64::MIN_POSITIVE).log2()
        } else {
            x
        }
    }

    fn sx(&self, x: f64) -> f64 {
        self.left + (self.fx(x) - self.x0) / (self.x1 - self.x0) * (self.w - self.left - self.right)
    }

    fn sy(&self, y: f64) -> f64 {
        self.h - self.bottom - (y - self.y0) / (self.y1 * 1.05 - self.y0) * (self.h - self.top - self.bottom)
    }
}

impl LineChart<'_> {
    pub fn render(&self) -> String {
        let (w, h) = (640.0, 360.0);
        let mut frame = Frame {
            w,
            h,
            left: 70.0,
            // Room above the plot for the legend row, so no name sits on a curve.
            top: 44.0,
            right: 20.0,
            bottom: 50.0,
            log2_x: self.log2_x,
            x0: 0.0,
            x1: 0.0,
            y0: 0.0,
            y1: 0.0,
        };
        let pts: Vec<(f64, f64)> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().copied())
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .collect();
        let mut s = format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="{t}"><title>{t}</title>"#,
            t = esc(self.title)
        );
        if pts.is_empty() {
            s += r#"<text x="20" y="40" class="axis">no points</text></svg>"#;
            return s;
        }
        (frame.x0, frame.x1) = span(pts.iter().map(|p| frame.fx(p.0)));
        frame.y1 = span(pts.iter().map(|p| p.1)).1;
        self.axes(&frame, &mut s);
        self.marks(&frame, &mut s);
        for (k, series) in self.series.iter().enumerate() {
            self.series_svg(&frame, k, series, &mut s);
        }
        s += "</svg>";
        s
    }

    /// The axes, their ticks and their labels.
    fn axes(&self, f: &Frame, s: &mut String) {
        let (left, top, h, w, right, bottom) = (f.left, f.top, f.h, f.w, f.right, f.bottom);
        let (x0, x1, y0, y1) = (f.x0, f.x1, f.y0, f.y1);
        let _ = write!(
            s,
            r##"<line x1="{left}" y1="{b}" x2="{r}" y2="{b}" stroke="#333"/><line x1="{left}" y1="{top}" x2="{left}" y2="{b}" stroke="#333"/>"##,
            b = h - bottom,
            r = w - right
        );
        for k in 0..=4 {
            let y = y0 + (y1 * 1.05 - y0) * k as f64 / 4.0;
            let _ = write!(
                s,
                r#"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{y:.0}</text>"#,
                left - 6.0,
                f.sy(y) + 4.0
            );
            let xv = x0 + (x1 - x0) * k as f64 / 4.0;
            let label = if self.log2_x {
                human(2f64.powf(xv))
            } else {
                format!("{xv:.1}")
            };
            let px = left + (xv - x0) / (x1 - x0) * (w - left - right);
            let _ = write!(
                s,
                r#"<text x="{px:.1}" y="{:.1}" class="tick" text-anchor="middle">{label}</text>"#,
                h - bottom + 16.0
            );
        }
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="{:.1}" class="axis" text-anchor="middle">{}</text><text x="14" y="{:.1}" class="axis" transform="rotate(-90 14 {:.1})" text-anchor="middle">{}</text>"#,
            (left + w - right) / 2.0,
            h - 10.0,
            esc(self.x_label),
            (top + h - bottom) / 2.0,
            (top + h - bottom) / 2.0,
            esc(self.y_label)
        );
    }

    /// A dashed vertical line and a label at each mark inside the x range; labels
    /// of neighbouring marks step down a line each, so close marks do not overlap.
    fn marks(&self, f: &Frame, s: &mut String) {
        let inside = self
            .marks
            .iter()
            .filter(|(x, _)| x.is_finite() && f.fx(*x) >= f.x0 && f.fx(*x) <= f.x1);
        for (k, (x, label)) in inside.enumerate() {
            let px = f.sx(*x);
            let _ = write!(
                s,
                r##"<line x1="{px:.1}" y1="{}" x2="{px:.1}" y2="{:.1}" stroke="#999" stroke-dasharray="4 3"><title>{}</title></line><text x="{:.1}" y="{:.1}" class="tick mark">{}</text>"##,
                f.top,
                f.h - f.bottom,
                esc(label),
                px + 3.0,
                f.top + 11.0 + 12.0 * (k % 3) as f64,
                esc(label)
            );
        }
    }

    /// Series `k`: its line, a point with its value per sample, and its name.
    fn series_svg(&self, f: &Frame, k: usize, series: &Series, s: &mut String) {
        let c = COLOURS[k % COLOURS.len()];
        let finite = || {
            series
                .points
                .iter()
                .filter(|(x, y)| x.is_finite() && y.is_finite())
        };
        let path: Vec<String> = finite()
            .map(|&(x, y)| format!("{:.1},{:.1}", f.sx(x), f.sy(y)))
            .collect();
        let _ = write!(
            s,
            r#"<polyline fill="none" stroke="{c}" stroke-width="2" points="{}"/>"#,
            path.join(" ")
        );
        for &(x, y) in finite() {
            let _ = write!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{c}"><title>{}: {} = {}, {} = {y:.2}</title></circle>"#,
                f.sx(x),
                f.sy(y),
                esc(&series.name),
                esc(self.x_label),
                if self.log2_x { human(x) } else { format!("{x:.2}") },
                esc(self.y_label)
            );
        }
        // The legend: one row above the plot, each name after the ones before it.
        let before: usize = self.series[..k].iter().map(|s| s.name.chars().count() + 4).sum();
        let _ = write!(
            s,
            r#"<text x="{:.1}" y="18" class="tick legend" fill="{c}">&#9632; {}</text>"#,
            f.left + 7.0 * before as f64,
            esc(&series.name)
        );
    }
}

fn span(v: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = v.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| {
        (a.min(x), b.max(x))
    });
    if hi > lo {
        (lo, hi)
    } else {
        (lo - 1.0, hi + 1.0)
    }
}

/// Bytes in binary units, for log2 axes of sizes: 4K, 2M, 1G.
pub fn human(bytes: f64) -> String {
    const UNITS: [&str; 5] = ["", "K", "M", "G", "T"];
    let mut v = bytes;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    if (v - v.round()).abs() < 1e-9 {
        format!("{v:.0}{}", UNITS[u])
    } else {
        format!("{v:.1}{}", UNITS[u])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ramp_ends_and_escapes() {
        assert_eq!(colour(0.0), "#440154");
        assert_eq!(colour(1.0), "#fde725");
        assert_eq!(colour(f64::NAN), "#440154");
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        assert_eq!(human(4096.0), "4K");
        assert_eq!(human(1.5 * 1024.0 * 1024.0), "1.5M");
    }

    /// The legend and level labels as the sweep draws them: where the series name
    /// used to sit on the first mark's label ("L2 Unified" over "CPU 0").
    #[test]
    fn legend_and_level_labels_stay_clear_of_the_plot_and_of_each_other() {
        let chart = LineChart {
            title: "sweep",
            x_label: "working set",
            y_label: "ns",
            series: vec![
                Series {
                    name: "CPU 0".into(),
                    points: vec![(4096.0, 1.0), (1048576.0, 4.0), (64.0 * 1048576.0, 150.0)],
                },
                Series {
                    name: "idle".into(),
                    points: vec![(4096.0, 1.0)],
                },
            ],
            log2_x: true,
            marks: vec![
                (32768.0, "L1 Data".into()),
                (65536.0, "L2 Unified".into()),
                (131072.0, "L3 Unified".into()),
            ],
        };
        let svg = chart.render();
        // (x, y, text) of every legend and mark label.
        let labels: Vec<(f64, f64, String)> = svg
            .split("<text ")
            .skip(1)
            .filter(|t| t.contains("legend") || t.contains("mark"))
            .map(|t| {
                let attr = |name: &str| -> f64 {
                    let at = t.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                    t[at..].split('"').next().unwrap().parse().unwrap()
                };
                let text = t.split('>').nth(1).unwrap().split('<').next().unwrap();
                let text = text.replace("&#9632;", "\u{25a0}");
                (attr("x"), attr("y"), text)
            })
            .collect();
        assert_eq!(labels.len(), 5, "{labels:?}");
        let plot_top = 44.0;
        for (x, y, text) in &labels {
            let legend = text.contains("CPU 0") || text.contains("idle");
            assert_eq!(
                legend,
                *y < plot_top - 12.0,
                "{text} at {x},{y}: the legend above the plot, labels inside"
            );
        }
        // Two labels on one line are apart by more than the first one's width
        // (7 px a character at 11 px).
        for (i, a) in labels.iter().enumerate() {
            for b in &labels[i + 1..] {
                if (a.1 - b.1).abs() < 11.0 {
                    let (left, right) = if a.0 <= b.0 { (a, b) } else { (b, a) };
                    let width = 7.0 * left.2.chars().count() as f64;
                    assert!(right.0 - left.0 > width, "{left:?} overlaps {right:?}");
                }
            }
        }
    }
}
