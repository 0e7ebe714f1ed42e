//! A line chart of resource use over time: one or more lines on the time
//! axis of the replica timeline, an optional limit drawn as a dashed line,
//! and a readout of every line's value at the time under the pointer (or
//! the newest values when the pointer is elsewhere). SVG, no library.

use leptos::prelude::*;

use super::numbers::{decimal, within};
use super::time::format_time;

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

#[component]
pub fn LineChart(
    title: String,
    unit: String,
    #[prop(into)] lines: Signal<Vec<Line>>,
    #[prop(into)] limit: Signal<Option<f64>>,
    #[prop(into)] start: Signal<i64>,
    #[prop(into)] end: Signal<i64>,
) -> impl IntoView {
    let hover = RwSignal::new(None::<i64>);
    let top = Memo::new(move |_| lines.with(|l| top_of(l, limit.get())));
    let unit_for_text = unit.clone();
    let text = move || lines.with(|l| readout(l, &unit_for_text, hover.get()));
    let unit_for_axis = unit.clone();
    let axis_top = move || format_value(&unit_for_axis, top.get());
    let on_move = move |ev: leptos::ev::MouseEvent| {
        let Some(target) = ev.current_target() else { return };
        let element: web_sys::Element = wasm_bindgen::JsCast::unchecked_into(target);
        let width = f64::from(element.client_width());
        if width > 0.0 {
            let share = within(f64::from(ev.offset_x()) / width, 0.0, 1.0);
            let (s, e) = (start.get_untracked(), end.get_untracked());
            hover.set(Some(s + ((e - s) as f64 * share) as i64));
        }
    };
    let limit_line = move || {
        limit.get().map(|limit| {
            let y = decimal(HEIGHT - within(limit / top.get() * HEIGHT, 0.0, HEIGHT), 1);
            view! { <line class="limit" x1="0" x2=decimal(WIDTH, 0) y1=y.clone() y2=y></line> }
        })
    };
    let polylines = move || {
        lines.with(|l| {
            l.iter()
                .enumerate()
                .map(|(i, line)| {
                    let points = polyline(&line.points, start.get(), end.get(), top.get());
                    // One sample is a dot: a polyline of one point draws
                    // nothing (a replica shorter than the sampling period).
                    let dot = (line.points.len() == 1).then(|| {
                        let (x, y) = points.split_once(',').unwrap_or(("0", "0"));
                        view! { <circle class=COLOURS[i % COLOURS.len()] cx=x.to_string() cy=y.to_string() r="4"></circle> }
                    });
                    view! { <polyline class=COLOURS[i % COLOURS.len()] points=points.clone()></polyline> {dot} }
                })
                .collect_view()
        })
    };
    let unit_for_limit = unit.clone();
    let limit_text = move || limit.get().map(|l| format!(" (limit {})", format_value(&unit_for_limit, l)));
    view! {
        <figure class="chart">
            <figcaption><strong>{title.clone()}</strong>{limit_text}" "<span class="chart-readout">{text}</span></figcaption>
            <svg viewBox=format!("0 0 {} {}", decimal(WIDTH, 0), decimal(HEIGHT, 0)) preserveAspectRatio="none" role="img" aria-label=title
                on:mousemove=on_move on:mouseleave=move |_| hover.set(None)>
                {limit_line}
                {polylines}
            </svg>
            <div class="chart-axis"><span>{axis_top}</span><span>{move || format_time(start.get())}</span><span>{move || format_time(end.get())}</span></div>
        </figure>
    }
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
    fn lines_are_placed_on_the_time_axis_under_the_limit() {
        let line = Line { label: "cpu".into(), points: vec![(0, 0.0), (500, 1.0), (1000, 2.0)] };
        assert_eq!(top_of(std::slice::from_ref(&line), Some(4.0)), 4.4);
        assert_eq!(polyline(&line.points, 0, 1000, 2.0), "0.0,160.0 500.0,80.0 1000.0,0.0");
        let text = readout(std::slice::from_ref(&line), "cores", Some(480));
        assert!(text.starts_with("cpu: 1.00 cores at "), "{text}");
        assert_eq!(readout(&[], "cores", None), "no samples");
    }
}
