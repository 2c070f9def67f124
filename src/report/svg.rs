//! Inline SVG charts for the report: one plot type with linear or log axes and three kinds of
//! marks (bars, lines, a marked x value), written as plain SVG text.

use std::fmt::Write;

const W: f64 = 560.0;
const H: f64 = 250.0;
/// Margins: left, right, top, bottom.
const M: (f64, f64, f64, f64) = (56.0, 14.0, 14.0, 40.0);

/// One axis: its range and whether it is logarithmic (log10).
#[derive(Clone, Copy)]
pub(super) struct Axis {
    pub lo: f64,
    pub hi: f64,
    pub log: bool,
}

impl Axis {
    fn pos(&self, v: f64, from: f64, to: f64) -> f64 {
        let f = |x: f64| if self.log { x.max(1e-12).log10() } else { x };
        let (a, b) = (f(self.lo), f(self.hi));
        let t = if b > a { (f(v) - a) / (b - a) } else { 0.0 };
        from + t.clamp(0.0, 1.0) * (to - from)
    }
}

/// Something drawn on the plot.
pub(super) enum Mark {
    /// Bars from the x axis: (x from, x to, y, colour).
    Bars(Vec<(f64, f64, f64)>, &'static str),
    /// A polyline through points, in a colour.
    Line(Vec<(f64, f64)>, &'static str),
    /// Points, in a colour.
    Dots(Vec<(f64, f64)>, &'static str),
    /// A vertical line at x with a label.
    Rule(f64, String),
}

/// A chart.
pub(super) struct Chart {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub x_ticks: Vec<(f64, String)>,
    pub y_ticks: Vec<(f64, String)>,
    pub x_label: String,
    pub y_label: String,
    pub marks: Vec<Mark>,
    /// Legend: (colour, name).
    pub legend: Vec<(&'static str, String)>,
}

/// XML-escaped text.
pub(super) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => o.push(' '),
            // Bidirectional overrides and isolates would reorder the page's text around them
            // (a filename or id that reads backwards): shown, not applied.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {
                o.push_str(&format!("&lt;U+{:04X}&gt;", c as u32));
            }
            c => o.push(c),
        }
    }
    o
}

impl Chart {
    fn px(&self, x: f64) -> f64 {
        self.x.pos(x, M.0, W - M.1)
    }

    fn py(&self, y: f64) -> f64 {
        self.y.pos(y, H - M.3, M.2)
    }

    /// The chart as an `<svg>` element.
    pub(super) fn render(&self) -> String {
        let mut s = String::new();
        let _ = write!(
            s,
            r#"<figure><figcaption>{}</figcaption><svg class="chart" viewBox="0 0 {W} {H}" role="img" aria-label="{}">"#,
            esc(&self.title),
            esc(&self.title)
        );
        let (x0, x1, y0, y1) = (M.0, W - M.1, H - M.3, M.2);
        for (v, label) in &self.y_ticks {
            let y = self.py(*v);
            let _ = write!(
                s,
                r#"<line class="grid" x1="{x0}" x2="{x1}" y1="{y:.1}" y2="{y:.1}"/><text class="tick" x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                x0 - 4.0,
                y + 3.5,
                esc(label)
            );
        }
        for (v, label) in &self.x_ticks {
            let x = self.px(*v);
            let _ = write!(
                s,
                r#"<line class="axis" x1="{x:.1}" x2="{x:.1}" y1="{y0}" y2="{:.1}"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                y0 + 4.0,
                y0 + 15.0,
                esc(label)
            );
        }
        let _ = write!(
            s,
            r#"<line class="axis" x1="{x0}" x2="{x1}" y1="{y0}" y2="{y0}"/><line class="axis" x1="{x0}" x2="{x0}" y1="{y0}" y2="{y1}"/>"#
        );
        for mark in &self.marks {
            match mark {
                Mark::Bars(bars, colour) => {
                    for &(a, b, v) in bars {
                        if v <= 0.0 || (self.y.log && v < self.y.lo) {
                            continue;
                        }
                        let (xa, xb) = (self.px(a), self.px(b));
                        let top = self.py(v);
                        let _ = write!(
                            s,
                            r#"<rect x="{:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{colour}"/>"#,
                            xa + 0.5,
                            (xb - xa - 1.0).max(0.5),
                            (y0 - top).max(0.5)
                        );
                    }
                }
                Mark::Line(points, colour) => {
                    let pts: Vec<String> = points
                        .iter()
                        .map(|&(x, y)| format!("{:.1},{:.1}", self.px(x), self.py(y)))
                        .collect();
                    let _ = write!(
                        s,
                        r#"<polyline fill="none" stroke="{colour}" stroke-width="2" points="{}"/>"#,
                        pts.join(" ")
                    );
                }
                Mark::Dots(points, colour) => {
                    for &(x, y) in points {
                        let _ = write!(
                            s,
                            r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{colour}"/>"#,
                            self.px(x),
                            self.py(y)
                        );
                    }
                }
                Mark::Rule(x, label) => {
                    let x = self.px(*x);
                    let _ = write!(
                        s,
                        r#"<line class="rule" x1="{x:.1}" x2="{x:.1}" y1="{y0}" y2="{y1}"/><text class="rule-label" x="{:.1}" y="{:.1}">{}</text>"#,
                        x + 4.0,
                        y1 + 10.0,
                        esc(label)
                    );
                }
            }
        }
        let _ = write!(
            s,
            r#"<text class="label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text><text class="label" x="12" y="{:.1}" text-anchor="middle" transform="rotate(-90 12 {:.1})">{}</text>"#,
            (x0 + x1) / 2.0,
            H - 6.0,
            esc(&self.x_label),
            (y0 + y1) / 2.0,
            (y0 + y1) / 2.0,
            esc(&self.y_label)
        );
        for (i, (colour, name)) in self.legend.iter().enumerate() {
            let y = y1 + 4.0 + 14.0 * i as f64;
            let _ = write!(
                s,
                r#"<rect x="{:.1}" y="{y:.1}" width="10" height="10" fill="{colour}"/><text class="tick" x="{:.1}" y="{:.1}">{}</text>"#,
                x1 - 110.0,
                x1 - 96.0,
                y + 9.0,
                esc(name)
            );
        }
        s.push_str("</svg></figure>");
        s
    }
}

/// Ticks at powers of ten from `lo` to `hi` (at least 1).
pub(super) fn decades(lo: f64, hi: f64) -> Vec<(f64, String)> {
    let mut out = Vec::new();
    let mut v = 1.0f64;
    while v <= hi * 1.0001 {
        if v >= lo * 0.9999 {
            out.push((v, super::numbers::short_count(v as u64)));
        }
        v *= 10.0;
    }
    out
}

/// About five round ticks from 0 to `hi`.
pub(super) fn linear_ticks(hi: f64) -> Vec<(f64, String)> {
    if hi <= 0.0 {
        return vec![(0.0, "0".into())];
    }
    let raw = hi / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|&s| s >= raw)
        .unwrap_or(mag * 10.0);
    let mut out = Vec::new();
    let mut v = 0.0;
    while v <= hi * 1.0001 {
        out.push((v, super::numbers::short_count(v.round() as u64)));
        v += step;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bidi_overrides_are_shown_not_applied() {
        assert_eq!(
            esc("a\u{202e}b\u{2066}c"),
            "a&lt;U+202E&gt;b&lt;U+2066&gt;c"
        );
        assert_eq!(esc("<x>\u{7}"), "&lt;x&gt; ");
    }

    #[test]
    fn a_chart_is_one_svg_element_with_escaped_text() {
        let c = Chart {
            title: "a <b> & c".into(),
            x: Axis {
                lo: 0.0,
                hi: 1.0,
                log: false,
            },
            y: Axis {
                lo: 1.0,
                hi: 1000.0,
                log: true,
            },
            x_ticks: vec![(0.5, "0.5".into())],
            y_ticks: decades(1.0, 1000.0),
            x_label: "x".into(),
            y_label: "y".into(),
            marks: vec![
                Mark::Bars(vec![(0.0, 0.5, 10.0), (0.5, 1.0, 0.0)], "#123"),
                Mark::Rule(0.8, "t".into()),
            ],
            legend: vec![],
        };
        let s = c.render();
        assert!(s.starts_with("<figure>") && s.ends_with("</svg></figure>"));
        assert!(s.contains("a &lt;b&gt; &amp; c"));
        assert_eq!(s.matches("<rect").count(), 1, "a zero bar is not drawn");
        assert_eq!(decades(1.0, 1000.0).len(), 4);
        assert_eq!(linear_ticks(100.0).last().map(|t| t.0), Some(100.0));
    }
}
