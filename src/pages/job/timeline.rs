//! The replica timeline: an SVG chart with one lane per completion index and
//! one bar per attempt, coloured by outcome, so a retried or preempted
//! replica stands out at a glance.
//!
//! Bars are placed in percent of the chart's width (SVG length attributes,
//! not styles, so the strict CSP is satisfied) and the chart stretches to
//! any screen. Lane labels sit in an HTML column beside it.

use jobdeck_api::{Replica, ReplicaPhase};
use leptos::prelude::*;

use crate::components::dom::{self, Keyed};
use crate::components::state_badge::replica_outcome;
use crate::components::time::{format_clock, format_duration};
use crate::router::use_navigate;
use crate::routes;

/// Height of a lane in pixels; charts with many lanes use thin ones.
const LANE: i64 = 26;
const THIN_LANE: i64 = 10;
/// More lanes than this and the chart switches to thin lanes.
const THIN_FROM: i64 = 40;
/// The narrowest bar, in hundredths of a percent, so a very short attempt
/// stays visible.
const MIN_WIDTH: i64 = 60;
/// The chart's full width, in hundredths of a percent. Positions are whole
/// numbers: formatting floats would pull a float printer into the download.
const FULL: i64 = 10_000;

/// One attempt as drawn.
#[derive(Debug, Clone, PartialEq)]
pub struct Bar {
    pub replica_id: String,
    pub lane: i64,
    /// Left edge and width in hundredths of a percent of the chart.
    pub x: i64,
    pub width: i64,
    /// Colour family (as `replica_outcome`).
    pub tone: &'static str,
    /// The accessible name, also the hover title.
    pub label: String,
}

/// Everything the chart draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Layout {
    pub lanes: i64,
    pub bars: Vec<Bar>,
    /// The times at the chart's left and right edges (Unix milliseconds).
    pub start: i64,
    pub end: i64,
}

/// Attempts in reading order: by completion index, then attempt. Every
/// page that orders attempts comes here, so the console holds one copy of
/// the sort.
pub fn in_order<'a>(replicas: impl IntoIterator<Item = &'a Replica>) -> Vec<&'a Replica> {
    let mut attempts: Vec<&Replica> = replicas.into_iter().collect();
    sort_attempts(&mut attempts);
    attempts
}

/// `in_order` for a list the caller keeps.
pub fn into_order(replicas: Vec<Replica>) -> Vec<Replica> {
    in_order(&replicas).into_iter().cloned().collect()
}

/// A stable insertion sort. The server sends attempts in this order already
/// (its store reads them so), which makes this one pass that moves nothing;
/// the standard library's sort would be about 4.6 KB of code on every tab
/// that orders attempts, for the same pass.
fn sort_attempts(attempts: &mut [&Replica]) {
    let key = |r: &Replica| (r.status.completion_index, r.status.attempt);
    for sorted in 1..attempts.len() {
        let mut at = sorted;
        while at > 0 && key(attempts[at - 1]) > key(attempts[at]) {
            attempts.swap(at - 1, at);
            at -= 1;
        }
    }
}

/// Places every attempt. An attempt still pending or running reaches to
/// `now`; one that is pending without a start time begins where the lane's
/// previous attempt ended.
pub fn layout(replicas: &[Replica], completions: i64, now: i64) -> Layout {
    let lanes = replicas.iter().map(|r| r.status.completion_index + 1).max().unwrap_or(0).max(completions);
    let attempts = in_order(replicas);
    let live = |r: &Replica| matches!(r.status.phase, ReplicaPhase::Pending | ReplicaPhase::Running);
    let start = attempts
        .iter()
        .filter_map(|r| r.status.start_time)
        .min()
        .or_else(|| attempts.iter().filter_map(|r| r.status.end_time).min())
        .unwrap_or(now);

    let mut spans = Vec::with_capacity(attempts.len());
    let mut lane_end: Option<(i64, i64)> = None;
    for r in &attempts {
        let previous_end = lane_end.filter(|(lane, _)| *lane == r.status.completion_index).map(|(_, end)| end);
        let from = r.status.start_time.or(previous_end).unwrap_or(start);
        let to = r.status.end_time.unwrap_or(if live(r) { now } else { from }).max(from);
        lane_end = Some((r.status.completion_index, to));
        spans.push((*r, from, to));
    }
    let end = spans.iter().map(|(_, _, to)| *to).max().unwrap_or(now).max(start + 1000);
    let span = end - start;

    let bars = spans
        .into_iter()
        .map(|(r, from, to)| {
            let x = ((from - start) * FULL / span).clamp(0, FULL - MIN_WIDTH);
            let width = ((to - from) * FULL / span).max(MIN_WIDTH).min(FULL - x);
            let (tone, word) = replica_outcome(&r.status);
            Bar {
                replica_id: r.id.clone(),
                lane: r.status.completion_index,
                x,
                width,
                tone,
                label: attempt_label(r, word, to - from),
            }
        })
        .collect();
    Layout { lanes, bars, start, end }
}

/// "Replica 2, attempt 1: Failed, exit code 3, 4s". Attempts count from 1
/// for people; the API counts from 0.
pub fn attempt_label(r: &Replica, outcome: &str, millis: i64) -> String {
    let s = &r.status;
    let mut label = format!("Replica {}, attempt {}: {outcome}", s.completion_index, s.attempt + 1);
    if s.phase == ReplicaPhase::Failed {
        if let Some(code) = s.exit_code {
            label.push_str(&format!(", exit code {code}"));
        }
        if let Some(signal) = s.signal {
            label.push_str(&format!(", signal {signal}"));
        }
    }
    if let Some(issue) = &s.readiness_issue {
        label.push_str(&format!(", {}", issue.reason));
    }
    if s.start_time.is_some() {
        label.push_str(&format!(", {}", format_duration(millis / 1000)));
    }
    label
}

/// Hundredths of a percent as an SVG length (`12.05%`).
fn percent(hundredths: i64) -> String {
    format!("{}.{:02}%", hundredths / 100, hundredths % 100)
}

const LEGEND: [(&str, &str); 5] = [
    ("ok", "Succeeded"),
    ("bad", "Failed"),
    ("active", "Running"),
    ("waiting", "Pending or preempted"),
    ("neutral", "Stopped"),
];

/// The replica timeline drawn straight into the DOM: the figure with its
/// caption, chart, axis and legend, made once and brought up to date by
/// `draw`.
pub struct Timeline {
    host: web_sys::Element,
    summary: web_sys::Element,
    container: web_sys::Element,
    lanes: web_sys::Element,
    svg: web_sys::Element,
    stripes: web_sys::Element,
    bars: web_sys::Element,
    /// The axis: the start, the span and the end.
    axis: [web_sys::Element; 3],
    keyed: Keyed<(Bar, i64)>,
    /// (lanes, lane height) as last drawn.
    drawn: (i64, i64),
}

impl Timeline {
    pub fn new(host: &web_sys::Element) -> Timeline {
        let figure = dom::child(host, "figure", "timeline", "");
        let caption = dom::child(&figure, "figcaption", "", "");
        dom::child(&caption, "h2", "", "Replica timeline");
        let summary = dom::child(&caption, "span", "help", "");
        let container = dom::child(&figure, "div", "timeline-chart", "");
        let lanes = dom::child(&container, "ol", "lanes", "");
        dom::set(&lanes, "aria-hidden", "true");
        let svg = dom::svg_element("svg");
        dom::set(&svg, "class", "bars");
        dom::set(&svg, "width", "100%");
        dom::set(&svg, "role", "list");
        dom::set(&svg, "aria-label", "Attempts by replica");
        let _ = container.append_child(&svg);
        let stripes = dom::child(&svg, "g", "", "");
        let bars = dom::child(&svg, "g", "", "");
        let axis_row = dom::child(&figure, "div", "axis", "");
        let axis = [(); 3].map(|()| dom::child(&axis_row, "span", "", ""));
        let legend = dom::child(&figure, "ul", "legend", "");
        dom::set(&legend, "aria-label", "Colours");
        for (tone, word) in LEGEND {
            let item = dom::child(&legend, "li", "", "");
            dom::child(&item, "span", &format!("swatch {tone}"), "");
            let _ = item.append_with_str_1(word);
        }
        Timeline {
            host: host.clone(),
            summary,
            container,
            lanes,
            svg,
            stripes,
            bars,
            axis,
            keyed: Keyed::default(),
            drawn: (-1, 0),
        }
    }

    pub fn draw(&mut self, layout: &Layout, job_id: &str) {
        let lane = if layout.lanes > THIN_FROM { THIN_LANE } else { LANE };
        dom::set(&self.container, "class", if lane == THIN_LANE { "timeline-chart thin" } else { "timeline-chart" });
        let failed = layout.bars.iter().filter(|b| b.tone == "bad").count();
        let summary = if layout.lanes == 0 {
            "No replicas yet.".to_string()
        } else {
            format!("{} attempts of {} replicas, {failed} failed", layout.bars.len(), layout.lanes)
        };
        self.summary.set_text_content(Some(&summary));
        let axis = if layout.lanes == 0 {
            [String::new(), String::new(), String::new()]
        } else {
            [format_clock(layout.start), format_duration((layout.end - layout.start) / 1000), format_clock(layout.end)]
        };
        for (span, text) in self.axis.iter().zip(axis) {
            span.set_text_content(Some(&text));
        }
        if self.drawn != (layout.lanes, lane) {
            self.drawn = (layout.lanes, lane);
            dom::set(&self.svg, "height", &(layout.lanes * lane).to_string());
            dom::clear(&self.lanes);
            dom::clear(&self.stripes);
            for i in 0..layout.lanes {
                dom::child(&self.lanes, "li", "", &format!("#{i}"));
                if i % 2 == 1 {
                    let stripe = dom::child(&self.stripes, "rect", "stripe", "");
                    for (name, value) in [("x", "0"), ("width", "100%")] {
                        dom::set(&stripe, name, value);
                    }
                    dom::set(&stripe, "y", &(i * lane).to_string());
                    dom::set(&stripe, "height", &lane.to_string());
                }
            }
        }
        let items: Vec<(String, (Bar, i64))> =
            layout.bars.iter().map(|bar| (bar.replica_id.clone(), (bar.clone(), lane))).collect();
        self.keyed.sync(
            &self.bars,
            &items,
            || {
                // A link, so the keyboard reaches every bar and Enter opens
                // its log; the figure's click handler routes it in the app.
                let g = dom::svg_element("a");
                dom::child(&g, "rect", "", "");
                dom::child(&g, "title", "", "");
                g
            },
            |g, (bar, lane), _| {
                let log = routes::job_logs(job_id, Some(&bar.replica_id));
                dom::set(g, "class", &format!("bar {}", bar.tone));
                dom::set(g, "role", "listitem");
                dom::set(g, "aria-label", &bar.label);
                dom::set(g, "href", &log);
                dom::set(g, "data-href", &log);
                if let (Some(rect), Some(title)) = (g.first_element_child(), g.last_element_child()) {
                    dom::set(&rect, "x", &percent(bar.x));
                    dom::set(&rect, "width", &percent(bar.width));
                    dom::set(&rect, "y", &(bar.lane * lane + 3).to_string());
                    dom::set(&rect, "height", &(lane - 6).to_string());
                    dom::set(&rect, "rx", "2");
                    title.set_text_content(Some(&bar.label));
                }
            },
        );
    }
}

/// The replica timeline of `replicas`, a drawn part (`dom::draw_into`):
/// the figure with its caption, chart, axis and legend is made on the first
/// draw and brought up to date after every change of the replicas, the
/// completions or the clock.
#[component]
pub fn ReplicaTimeline(
    #[prop(into)] replicas: Signal<Vec<Replica>>,
    #[prop(into)] completions: Signal<i64>,
    #[prop(into)] now: Signal<i64>,
    job_id: String,
) -> impl IntoView {
    let host = NodeRef::<leptos::html::Div>::new();
    let mut timeline: Option<Timeline> = None;
    dom::draw_into(
        host,
        Box::new(move |host| {
            let layout = replicas.with(|r| layout(r, completions.get(), now.get()));
            if timeline.as_ref().is_none_or(|c| &c.host != host) {
                timeline = Some(Timeline::new(host));
            }
            if let Some(timeline) = timeline.as_mut() {
                timeline.draw(&layout, &job_id);
            }
        }),
    );
    view! { <div node_ref=host on:click=open_clicked_log()></div> }
}

/// The click handler for an element holding timelines: one listener for all
/// bars, and a click on a bar opens its attempt's log in the app.
pub fn open_clicked_log() -> impl Fn(leptos::ev::MouseEvent) + 'static {
    let navigate = use_navigate();
    move |ev| {
        if let Some(href) = dom::closest_attribute(&ev, "data-href") {
            ev.prevent_default();
            navigate(&href);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{mount, replica};
    use ReplicaPhase::*;

    /// Four completions; replica 2 failed once and succeeded on its retry.
    fn retried() -> Vec<Replica> {
        vec![
            replica(0, 0, Succeeded, Some(0), Some(10_000)),
            replica(1, 0, Succeeded, Some(0), Some(8_000)),
            replica(2, 0, Failed, Some(0), Some(2_000)),
            replica(2, 1, Succeeded, Some(3_000), Some(20_000)),
            replica(3, 0, Succeeded, Some(1_000), Some(9_000)),
        ]
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn attempts_in_any_order_come_out_by_completion_then_attempt() {
        let mut shuffled = retried();
        shuffled.reverse();
        shuffled.swap(0, 2);
        let order: Vec<(i64, i64)> =
            in_order(&shuffled).iter().map(|r| (r.status.completion_index, r.status.attempt)).collect();
        assert_eq!(order, [(0, 0), (1, 0), (2, 0), (2, 1), (3, 0)]);
        assert_eq!(into_order(shuffled), retried());
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn five_attempts_are_five_bars_in_four_lanes() {
        let l = layout(&retried(), 4, 99_000);
        assert_eq!(l.lanes, 4);
        assert_eq!(l.bars.len(), 5);
        assert_eq!((l.start, l.end), (0, 20_000));
        let retry = &l.bars[3];
        assert_eq!((retry.lane, retry.tone), (2, "ok"));
        assert_eq!((retry.x, retry.width), (1500, 8500), "{retry:?}");
        assert_eq!(l.bars[2].tone, "bad");
        assert_eq!(l.bars[2].label, "Replica 2, attempt 1: Failed, exit code 3, 2s");
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn live_attempts_reach_now_and_lanes_cover_every_completion() {
        let replicas = vec![
            replica(0, 0, Running, Some(10_000), None),
            replica(1, 0, Failed, Some(10_000), Some(12_000)),
            replica(1, 1, Pending, None, None),
        ];
        let l = layout(&replicas, 3, 30_000);
        assert_eq!(l.lanes, 3, "a completion that never started still has its lane");
        assert_eq!(l.end, 30_000);
        assert_eq!(l.bars[0].width, FULL);
        // The pending retry starts where the failed attempt ended.
        assert_eq!((l.bars[2].x, l.bars[2].width), (1000, 9000));
        assert_eq!(l.bars[2].tone, "waiting");
        assert!(l.bars[2].label.contains("NoCapacity"));
        assert_eq!(layout(&[], 0, 5).lanes, 0);
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    async fn the_chart_names_every_bar() {
        let host = mount(|| {
            view! {
                <ReplicaTimeline replicas=Signal::stored(retried()) completions=Signal::stored(4) now=Signal::stored(99_000) job_id="job-1".to_string()/>
            }
        });
        crate::components::live::sleep(0).await;
        let bars = host.query_selector_all("svg a.bar").unwrap();
        assert_eq!(bars.length(), 5);
        assert_eq!(host.query_selector_all(".lanes li").unwrap().length(), 4);
        assert_eq!(host.query_selector_all("svg a.bar.bad").unwrap().length(), 1);
        let failed = host.query_selector("svg a.bar.bad").unwrap().unwrap();
        assert_eq!(
            failed.get_attribute("aria-label").as_deref(),
            Some("Replica 2, attempt 1: Failed, exit code 3, 2s")
        );
        assert_eq!(
            failed.query_selector("title").unwrap().unwrap().text_content().as_deref(),
            failed.get_attribute("aria-label").as_deref()
        );
        let rect = failed.query_selector("rect").unwrap().unwrap();
        assert_eq!(rect.namespace_uri().as_deref(), Some("http://www.w3.org/2000/svg"));
        assert_eq!(rect.get_attribute("x").as_deref(), Some("0.00%"));
        assert_eq!(rect.get_attribute("width").as_deref(), Some("10.00%"));
        assert!(host.text_content().unwrap().contains("5 attempts of 4 replicas, 1 failed"));
    }
}
