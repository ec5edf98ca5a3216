//! `plan population --html`: the candidate populations as one page, a chart of
//! expected bandwidth against usable capacity (one mark per population, its
//! colour the class) and the table beside it.

use std::fmt::Write;

use crate::svg::esc;

/// One population as the chart draws it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlanPoint {
    /// e.g. "12 x 64 GiB per socket".
    pub label: String,
    pub usable_gib: f64,
    /// Expected Triad (or, where RAS makes it unknown, the effective peak).
    pub gb_s: f64,
    /// balanced, near-balanced or unbalanced.
    pub class: String,
    pub loss_pct: f64,
    pub recommended: bool,
}

const CLASSES: [(&str, &str); 3] = [
    ("balanced", "#21918c"),
    ("near-balanced", "#ffa600"),
    ("unbalanced", "#e4572e"),
];

/// The page: `title`, a line saying what the figures are, the chart, the table.
pub fn render_population(title: &str, about: &str, points: &[PlanPoint]) -> String {
    let mut body = format!("<h1>{}</h1><p class=\"meta\">{}</p>", esc(title), esc(about));
    body += &chart(points);
    body +=
        "<table><tr><th>population</th><th>class</th><th>usable GiB</th><th>GB/s</th><th>loss %</th></tr>";
    for p in points {
        let mark = if p.recommended { " (recommended)" } else { "" };
        let _ = write!(
            body,
            "<tr><td>{}{mark}</td><td>{}</td><td>{:.0}</td><td>{:.1}</td><td>{:.1}</td></tr>",
            esc(&p.label),
            esc(&p.class),
            p.usable_gib,
            p.gb_s,
            p.loss_pct
        );
    }
    body += "</table>";
    crate::page(title, &body)
}

fn chart(points: &[PlanPoint]) -> String {
    let (w, h, left, bottom, top, right) = (640.0, 360.0, 70.0, 50.0, 20.0, 150.0);
    let x1 = points.iter().map(|p| p.usable_gib).fold(1.0, f64::max) * 1.1;
    let y1 = points.iter().map(|p| p.gb_s).fold(1.0, f64::max) * 1.1;
    let sx = |x: f64| left + x / x1 * (w - left - right);
    let sy = |y: f64| h - bottom - y / y1 * (h - top - bottom);
    let mut s = format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img"><style>.tick{{font:11px sans-serif;fill:#333}}</style><line x1="{left}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#333"/><line x1="{left}" y1="{top}" x2="{left}" y2="{:.1}" stroke="#333"/>"##,
        h - bottom,
        w - right,
        h - bottom,
        h - bottom
    );
    for i in 0..=4 {
        let (xv, yv) = (x1 / 1.1 * f64::from(i) / 4.0, y1 / 1.1 * f64::from(i) / 4.0);
        let _ = write!(
            s,
            r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">{xv:.0}</text><text x="{:.1}" y="{:.1}" class="tick" text-anchor="end">{yv:.0}</text>"##,
            sx(xv),
            h - bottom + 16.0,
            left - 6.0,
            sy(yv) + 4.0
        );
    }
    let _ = write!(
        s,
        r##"<text x="{:.1}" y="{:.1}" class="tick" text-anchor="middle">usable capacity, GiB</text><text x="14" y="{:.1}" class="tick" transform="rotate(-90 14 {:.1})" text-anchor="middle">GB/s</text>"##,
        (left + w - right) / 2.0,
        h - 12.0,
        h / 2.0,
        h / 2.0
    );
    for p in points {
        let colour = CLASSES.iter().find(|c| c.0 == p.class).map_or("#444", |c| c.1);
        let r = if p.recommended { 8.0 } else { 5.0 };
        let ring = if p.recommended {
            r##" stroke="#000" stroke-width="2""##
        } else {
            ""
        };
        let _ = write!(
            s,
            r##"<circle cx="{:.1}" cy="{:.1}" r="{r}" fill="{colour}" fill-opacity="0.8"{ring}><title>{}: {:.0} GiB, {:.1} GB/s, {}</title></circle>"##,
            sx(p.usable_gib),
            sy(p.gb_s),
            esc(&p.label),
            p.usable_gib,
            p.gb_s,
            esc(&p.class)
        );
    }
    for (i, (name, colour)) in CLASSES.iter().enumerate() {
        let y = top + 10.0 + 18.0 * i as f64;
        let _ = write!(
            s,
            r##"<circle cx="{:.1}" cy="{y:.1}" r="5" fill="{colour}"/><text x="{:.1}" y="{:.1}" class="tick">{name}</text>"##,
            w - right + 20.0,
            w - right + 30.0,
            y + 4.0
        );
    }
    s + "</svg>"
}
