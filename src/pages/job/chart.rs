//! A line chart of resource use over time: one or more lines on the time
//! axis of the replica timeline, an optional limit drawn as a dashed line,
//! and a readout of every line's value at the time under the pointer (or
//! the newest values when the pointer is elsewhere). SVG, no library.

use leptos::prelude::*;
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::Element;

use super::numbers::{decimal, within};
use crate::components::dom;
use crate::components::time::format_time;

/// One line of a chart: its label and its points `(t in Unix ms, value)`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Line {
    pub label: String,
    pub points: Vec<(i64, f64)>,
}

/// The chart's width and height in its own units (it scales to its box).
const WIDTH: f64 = 1000.0;
const HEIGHT: f64 = 160.0;

/// How values of a unit read: `1.25 cores`, `512 MiB`, `87 %`.
pub fn format_value(unit: &str, value: f64) -> String {
    match unit {
        "bytes" => {
            let mib = value / (1024.0 * 1024.0);
            if mib >= 1024.0 {
                format!("{} GiB", decimal(mib / 1024.0, 1))
            } else {
                format!("{} MiB", decimal(mib, 0))
            }
        }
        "MiB" if value >= 1024.0 => format!("{} GiB", decimal(value / 1024.0, 1)),
        "MiB" => format!("{} MiB", decimal(value, 0)),
        "cores" => format!("{} cores", decimal(value, 2)),
        "%" => format!("{} %", decimal(value, 0)),
        "W" => format!("{} W", decimal(value, 0)),
        "°C" => format!("{} °C", decimal(value, 0)),
        _ => decimal(value, 2),
    }
}

/// The top of the value axis: the limit or the highest value, with room
/// above it; at least 1 so a flat zero line is drawn at the bottom.
pub fn top_of(lines: &[Line], limit: Option<f64>) -> f64 {
    let highest = lines.iter().flat_map(|l| l.points.iter().map(|p| p.1)).fold(0.0, f64::max);
    (highest.max(limit.unwrap_or(0.0)) * 1.1).max(1.0)
}

/// The `points` attribute of a line's polyline.
pub fn polyline(points: &[(i64, f64)], start: i64, end: i64, top: f64) -> String {
    let span = (end - start).max(1) as f64;
    points
        .iter()
        .map(|(t, v)| {
            let x = within((t - start) as f64 / span * WIDTH, 0.0, WIDTH);
            let y = HEIGHT - within(v / top * HEIGHT, 0.0, HEIGHT);
            format!("{},{}", decimal(x, 1), decimal(y, 1))
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The value of each line at time `t` (its nearest point), as one sentence.
pub fn readout(lines: &[Line], unit: &str, t: Option<i64>) -> String {
    let mut at = None;
    let parts: Vec<String> = lines
        .iter()
        .filter_map(|line| {
            let point = match t {
                Some(t) => line.points.iter().min_by_key(|(pt, _)| (pt - t).abs()),
                None => line.points.last(),
            }?;
            at = Some(point.0);
            Some(format!("{}: {}", line.label, format_value(unit, point.1)))
        })
        .collect();
    match at {
        Some(at) => format!("{} at {}", parts.join(", "), format_time(at)),
        None => "no samples".to_string(),
    }
}

const COLOURS: [&str; 4] = ["line-a", "line-b", "line-c", "line-d"];

/// A chart to draw: its title, the unit of its values, its lines and the
/// limit drawn as a dashed line, if any.
pub struct Chart {
    pub title: String,
    pub unit: &'static str,
    pub lines: Vec<Line>,
    pub limit: Option<f64>,
}

/// What a drawn chart's readout needs.
struct Drawn {
    lines: Vec<Line>,
    unit: &'static str,
    start: i64,
    end: i64,
    readout: Element,
}

/// Charts drawn straight into the page (`components/dom.rs`), SVG, on one
/// time axis, with one listener for the readout of every chart: as typed
/// views with signals each chart was its own generated code in the metrics
/// tab's download (docs/measurements.md, "The job page's parts drawn").
pub struct Charts {
    drawn: dom::Part<Vec<Drawn>>,
    listener: Closure<dyn Fn(web_sys::Event)>,
}

impl Default for Charts {
    fn default() -> Self {
        let drawn = dom::Part::new(Vec::new());
        let listener = drawn.listener(show_readout);
        Charts { drawn, listener }
    }
}

/// Shows the value under the pointer in its chart's readout, or the newest
/// when the pointer leaves.
fn show_readout(drawn: &dom::Part<Vec<Drawn>>, ev: web_sys::Event) {
    let Some(ev) = ev.dyn_ref::<web_sys::MouseEvent>() else { return };
    let Some(svg) = ev.current_target().and_then(|t| t.dyn_into::<Element>().ok()) else { return };
    let index = svg.get_attribute("data-chart").and_then(|i| i.parse::<usize>().ok());
    drawn.read(|shown| {
        let Some(chart) = index.and_then(|i| shown.get(i)) else { return };
        let width = f64::from(svg.client_width());
        let at = (ev.type_() == "mousemove" && width > 0.0).then(|| {
            let share = within(f64::from(ev.offset_x()) / width, 0.0, 1.0);
            chart.start + ((chart.end - chart.start) as f64 * share) as i64
        });
        chart.readout.set_text_content(Some(&readout(&chart.lines, chart.unit, at)));
    });
}

impl Charts {
    /// Forgets the charts drawn so far (their elements are being removed).
    pub fn clear(&self) {
        self.drawn.change(Vec::clear);
    }

    /// Draws `chart` at the end of `parent`, on the axis `start..end`.
    pub fn draw(&self, parent: &Element, chart: Chart, start: i64, end: i64) {
        let Chart { title, unit, lines, limit } = chart;
        let top = top_of(&lines, limit);
        let figure = dom::child(parent, "figure", "chart", "");
        let caption = dom::child(&figure, "figcaption", "", "");
        dom::child(&caption, "strong", "", &title);
        if let Some(limit) = limit {
            let _ = caption.append_with_str_1(&format!(" (limit {})", format_value(unit, limit)));
        }
        let _ = caption.append_with_str_1(" ");
        let readout_text = dom::child(&caption, "span", "chart-readout", &readout(&lines, unit, None));

        let svg = dom::svg_element("svg");
        let _ = figure.append_child(&svg);
        for (name, value) in [
            ("viewBox", format!("0 0 {} {}", decimal(WIDTH, 0), decimal(HEIGHT, 0))),
            ("preserveAspectRatio", "none".into()),
            ("role", "img".into()),
            ("aria-label", title),
            ("data-chart", self.drawn.read(Vec::len).unwrap_or_default().to_string()),
        ] {
            dom::set(&svg, name, &value);
        }
        for event in ["mousemove", "mouseleave"] {
            let _ = svg.add_event_listener_with_callback(event, self.listener.as_ref().unchecked_ref());
        }
        if let Some(limit) = limit {
            let y = decimal(HEIGHT - within(limit / top * HEIGHT, 0.0, HEIGHT), 1);
            let line = dom::child(&svg, "line", "limit", "");
            for (name, value) in [("x1", "0"), ("x2", &decimal(WIDTH, 0)), ("y1", &y), ("y2", &y)] {
                dom::set(&line, name, value);
            }
        }
        for (i, line) in lines.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let points = polyline(&line.points, start, end, top);
            // One sample is a dot: a polyline of one point draws nothing (a
            // replica shorter than the sampling period).
            if line.points.len() == 1 {
                let (x, y) = points.split_once(',').unwrap_or(("0", "0"));
                let dot = dom::child(&svg, "circle", colour, "");
                for (name, value) in [("cx", x), ("cy", y), ("r", "4")] {
                    dom::set(&dot, name, value);
                }
            }
            dom::set(&dom::child(&svg, "polyline", colour, ""), "points", &points);
        }
        let axis = dom::child(&figure, "div", "chart-axis", "");
        for words in [format_value(unit, top), format_time(start), format_time(end)] {
            dom::child(&axis, "span", "", &words);
        }
        self.drawn.change(|drawn| drawn.push(Drawn { lines, unit, start, end, readout: readout_text }));
    }
}

/// One chart that does not change (the failure analysis's memory curve).
#[component]
pub fn StillChart(chart: Chart, start: i64, end: i64) -> impl IntoView {
    let host = NodeRef::<leptos::html::Div>::new();
    let mut chart = Some(chart);
    let charts = Charts::default();
    dom::draw_into(
        host,
        Box::new(move |host| {
            if let Some(chart) = chart.take() {
                charts.draw(host, chart, start, end);
            }
        }),
    );
    view! { <div node_ref=host></div> }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn values_read_in_their_units() {
        let cases = [
            ("bytes", 512.0 * 1024.0 * 1024.0, "512 MiB"),
            ("bytes", 3.0 * 1024.0 * 1024.0 * 1024.0, "3.0 GiB"),
            ("MiB", 81_559.0, "79.6 GiB"),
            ("cores", 1.254, "1.25 cores"),
            ("%", 87.4, "87 %"),
        ];
        for (unit, value, text) in cases {
            assert_eq!(format_value(unit, value), text);
        }
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_chart_is_drawn_with_its_lines_limit_and_newest_values() {
        let host = dom::element("div");
        let charts = Charts::default();
        let lines = vec![
            Line { label: "GPU 0".into(), points: vec![(0, 10.0), (1000, 50.0)] },
            Line { label: "GPU 1".into(), points: vec![(500, 20.0)] },
        ];
        charts.draw(&host, Chart { title: "GPU utilization".into(), unit: "%", lines, limit: Some(100.0) }, 0, 1000);
        charts.draw(&host, Chart { title: "CPU".into(), unit: "cores", lines: Vec::new(), limit: None }, 0, 1000);
        let all = |selector: &str| host.query_selector_all(selector).unwrap().length();
        assert_eq!((all("figure.chart"), all("svg polyline"), all("svg circle"), all("svg line.limit")), (2, 2, 1, 1));
        let first = host.query_selector("figure.chart").unwrap().unwrap();
        let caption = first.query_selector("figcaption").unwrap().unwrap().text_content().unwrap();
        assert!(caption.starts_with("GPU utilization (limit 100 %) GPU 0: 50 %, GPU 1: 20 % at "), "{caption}");
        let svg = first.query_selector("svg").unwrap().unwrap();
        assert_eq!(svg.namespace_uri().as_deref(), Some("http://www.w3.org/2000/svg"));
        assert_eq!(svg.get_attribute("data-chart").as_deref(), Some("0"));
        let points = first.query_selector("polyline").unwrap().unwrap().get_attribute("points").unwrap();
        assert_eq!(points, "0.0,145.5 1000.0,87.3");
        let second = host.query_selector_all("figure.chart").unwrap().get(1).unwrap();
        assert!(second.text_content().unwrap().contains("no samples"));
        charts.clear();
        assert_eq!(charts.drawn.read(Vec::len), Some(0));
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn lines_are_placed_on_the_time_axis_under_the_limit() {
        let line = Line { label: "cpu".into(), points: vec![(0, 0.0), (500, 1.0), (1000, 2.0)] };
        assert_eq!(top_of(std::slice::from_ref(&line), Some(4.0)), 4.4);
        assert_eq!(polyline(&line.points, 0, 1000, 2.0), "0.0,160.0 500.0,80.0 1000.0,0.0");
        let text = readout(std::slice::from_ref(&line), "cores", Some(480));
        assert!(text.starts_with("cpu: 1.00 cores at "), "{text}");
        assert_eq!(readout(&[], "cores", None), "no samples");
    }
}
