//! A fake Kubernetes API server for the executor's tests: real HTTP on a
//! loopback port, answering the paths, verbs and bodies kube-rs uses the way
//! the API server does (lists with a resource version, watches as a stream of
//! `{"type","object"}` lines resumed from a version, `409 AlreadyExists`,
//! `404 NotFound` Status bodies, merge patches, `stringData` folded into
//! `data`, the pod log API). It records every request so tests can assert
//! what the executor sent, and lets tests play the Job controller and the
//! kubelet by changing pods, Jobs and events.
//!
//! The pod log API answers as the API server and the kubelet do together
//! (`pkg/registry/core/pod/strategy.go` `LogLocation`, and the kubelet's
//! `kuberuntime/logs`): a pod without a node is `400 "pod … does not have a
//! host assigned"`, a container that has not started is `400 "container …
//! is waiting to start: …"`; `timestamps=true` prefixes each line with its
//! time in RFC 3339 with nine fractional digits; `sinceTime` is cut to whole
//! seconds (the API server formats it with `time.RFC3339` for the kubelet)
//! and lines before it are left out; `follow=true` keeps the stream open,
//! sending lines as they are written, until the container is no longer
//! running (terminated, the pod finished or gone). Tests write lines with
//! [`FakeKube::append_log`] and cut open streams with
//! [`FakeKube::break_log_streams`].
//!
//! It also says what the API server cannot, so tests wait on events rather
//! than on time: how many watches are open ([`FakeKube::open_watches`]) and
//! whether every open watch of a kind has streamed past a resource version
//! ([`FakeKube::watched_past`]).

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures_util::StreamExt;
use serde_json::{json, Value};
use tokio::sync::broadcast;

pub const NAMESPACE: &str = "ml";

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    pub query: BTreeMap<String, String>,
    pub content_type: Option<String>,
    pub body: Value,
}

/// The resource collections the fake serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Job,
    Pod,
    Secret,
    Service,
    Event,
    NetworkPolicy,
}

impl Kind {
    fn api_version(self) -> &'static str {
        match self {
            Kind::Job => "batch/v1",
            Kind::NetworkPolicy => "networking.k8s.io/v1",
            _ => "v1",
        }
    }
    fn kind(self) -> &'static str {
        match self {
            Kind::Job => "Job",
            Kind::Pod => "Pod",
            Kind::Secret => "Secret",
            Kind::Service => "Service",
            Kind::Event => "Event",
            Kind::NetworkPolicy => "NetworkPolicy",
        }
    }
    fn plural(self) -> &'static str {
        match self {
            Kind::Job => "jobs",
            Kind::Pod => "pods",
            Kind::Secret => "secrets",
            Kind::Service => "services",
            Kind::Event => "events",
            Kind::NetworkPolicy => "networkpolicies",
        }
    }
    fn group(self) -> &'static str {
        match self {
            Kind::Job => "batch",
            Kind::NetworkPolicy => "networking.k8s.io",
            _ => "",
        }
    }
}

/// A change as watches report it.
#[derive(Debug, Clone)]
struct Change {
    version: u64,
    kind: Kind,
    line: String,
    labels: BTreeMap<String, String>,
    object: Value,
}

/// One line of a container's log, as the container runtime wrote it.
#[derive(Debug, Clone)]
struct LogEntry {
    /// Unix nanoseconds.
    time: i128,
    text: String,
}

#[derive(Default)]
struct Objects {
    requests: Vec<Recorded>,
    version: u64,
    next_uid: u64,
    store: BTreeMap<(Kind, String), Value>,
    history: Vec<Change>,
    logs: BTreeMap<String, Vec<LogEntry>>,
    /// Bumped by `break_log_streams`: open log streams of an older
    /// generation fail.
    log_generation: u64,
    /// The bytes of each pod's log handed to the streams so far.
    log_bytes_sent: BTreeMap<String, usize>,
    /// What metrics-server reports per pod (CPU as Kubernetes quantities:
    /// `"250m"`, memory: `"64Mi"`); `None` when the cluster does not serve
    /// `metrics.k8s.io` (404, as a cluster without metrics-server).
    pod_usage: Option<BTreeMap<String, (String, String)>>,
}

struct Shared {
    objects: Mutex<Objects>,
    changes: broadcast::Sender<Change>,
    watches: Mutex<Watches>,
}

/// The watches served, for tests to wait on.
#[derive(Default)]
struct Watches {
    next_id: u64,
    opened: usize,
    /// Each open watch: its kind and the resource version it has streamed
    /// past (every change up to it sent or filtered out).
    open: BTreeMap<u64, (Kind, u64)>,
}

/// Ends a watch's entry when its stream is dropped (the client went away or
/// the watch timed out).
struct WatchGuard {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for WatchGuard {
    fn drop(&mut self) {
        self.shared.watches.lock().unwrap().open.remove(&self.id);
    }
}

impl WatchGuard {
    fn passed(&self, version: u64) {
        if let Some(entry) = self.shared.watches.lock().unwrap().open.get_mut(&self.id) {
            entry.1 = entry.1.max(version);
        }
    }
}

/// The running fake; dropping it stops the server.
pub struct FakeKube {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    server: tokio::task::JoinHandle<()>,
}

impl Drop for FakeKube {
    fn drop(&mut self) {
        self.server.abort();
    }
}

impl FakeKube {
    pub async fn start() -> FakeKube {
        let (changes, _) = broadcast::channel(1024);
        let shared = Arc::new(Shared {
            objects: Mutex::new(Objects { version: 100, ..Objects::default() }),
            changes,
            watches: Mutex::default(),
        });
        let router = Router::new().fallback(handle).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(async move {
            axum::serve(listener, router).await.unwrap();
        });
        FakeKube { addr, shared, server }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The cluster's current resource version.
    pub fn version(&self) -> u64 {
        self.shared.objects.lock().unwrap().version
    }

    /// The bytes of a pod's log the fake has handed to log streams so far.
    pub fn log_bytes_sent(&self, pod: &str) -> usize {
        self.shared.objects.lock().unwrap().log_bytes_sent.get(pod).copied().unwrap_or(0)
    }

    /// The watches open now, of every kind.
    pub fn open_watches(&self) -> usize {
        self.shared.watches.lock().unwrap().open.len()
    }

    /// The watches opened so far, closed ones included.
    pub fn watches_opened(&self) -> usize {
        self.shared.watches.lock().unwrap().opened
    }

    /// Whether a watch of `kind` is open and every open one has streamed
    /// every change up to `version` to its client (or left it out as not
    /// its own).
    pub fn watched_past(&self, kind: Kind, version: u64) -> bool {
        let watches = self.shared.watches.lock().unwrap();
        let mut of_kind = watches.open.values().filter(|(k, _)| *k == kind).peekable();
        of_kind.peek().is_some() && of_kind.all(|(_, passed)| *passed >= version)
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests()
    }

    /// The requests that change something (everything but GET).
    pub fn writes(&self) -> Vec<Recorded> {
        self.requests().into_iter().filter(|r| r.method != "GET").collect()
    }

    pub fn object(&self, kind: Kind, name: &str) -> Option<Value> {
        self.shared.object(kind, name)
    }

    /// Creates or replaces an object, as a controller would, and tells the
    /// watches.
    pub fn put(&self, kind: Kind, object: Value) {
        self.shared.put(kind, object)
    }

    /// Changes an object with a JSON merge patch.
    pub fn patch(&self, kind: Kind, name: &str, patch: Value) {
        self.shared.patch(kind, name, patch)
    }

    pub fn delete(&self, kind: Kind, name: &str) {
        self.shared.delete(kind, name)
    }

    /// Replaces a pod's container log: lines of `<RFC 3339 time> <text>`
    /// (a line without a time gets the previous line's).
    pub fn set_log(&self, pod: &str, text: &str) {
        let mut objects = self.shared.objects.lock().unwrap();
        let entries = parse_log(text, 0);
        objects.logs.insert(pod.to_string(), entries);
    }

    /// Serves `metrics.k8s.io` as metrics-server does, reporting `cpu` and
    /// `memory` (Kubernetes quantities) for `pod` while it runs.
    pub fn set_pod_usage(&self, pod: &str, cpu: &str, memory: &str) {
        let mut objects = self.shared.objects.lock().unwrap();
        objects.pod_usage.get_or_insert_with(BTreeMap::new).insert(pod.to_string(), (cpu.into(), memory.into()));
    }

    /// Appends lines to a pod's container log, as a running container
    /// writes them; followed streams send them.
    pub fn append_log(&self, pod: &str, text: &str) {
        let mut objects = self.shared.objects.lock().unwrap();
        let log = objects.logs.entry(pod.to_string()).or_default();
        let previous = log.last().map_or(0, |e| e.time);
        log.extend(parse_log(text, previous));
    }

    /// Cuts every open log stream, as a dropped connection or an API server
    /// going away would: the response ends with an error, mid-line if so.
    pub fn break_log_streams(&self) {
        self.shared.objects.lock().unwrap().log_generation += 1;
    }

    /// The log requests for one pod, in order.
    pub fn log_requests(&self, pod: &str) -> Vec<Recorded> {
        let path = format!("/api/v1/namespaces/{NAMESPACE}/pods/{pod}/log");
        self.requests().into_iter().filter(|r| r.path == path).collect()
    }
}

/// Reads `<RFC 3339 time> <text>` lines.
fn parse_log(text: &str, mut previous: i128) -> Vec<LogEntry> {
    text.lines()
        .map(|line| {
            let (time, text) = match line.split_once(' ') {
                Some((time, rest)) => match time.parse::<k8s_openapi::jiff::Timestamp>() {
                    Ok(time) => (time.as_nanosecond(), rest),
                    Err(_) => (previous, line),
                },
                None => (previous, line),
            };
            previous = time;
            LogEntry { time, text: text.to_string() }
        })
        .collect()
}

/// A time as the kubelet writes it with `timestamps=true`: RFC 3339 with
/// nine fractional digits, in UTC (Go's `RFC3339NanoFixed`).
pub fn kubelet_time(nanos: i128) -> String {
    let time = k8s_openapi::jiff::Timestamp::from_nanosecond(nanos).unwrap();
    format!("{}.{:09}Z", time.strftime("%Y-%m-%dT%H:%M:%S"), time.subsec_nanosecond())
}

/// What the pod says of its job container: whether it has started, whether
/// it still runs.
fn container_state(pod: &Value) -> (Result<(), String>, bool) {
    let finished = matches!(pod["status"]["phase"].as_str(), Some("Succeeded" | "Failed"));
    let status =
        pod["status"]["containerStatuses"].as_array().and_then(|all| all.iter().find(|c| c["name"] == json!("job")));
    let state = status.map(|c| &c["state"]);
    let started = match state {
        Some(state) if state.get("running").is_some() || state.get("terminated").is_some() => Ok(()),
        Some(state) => Err(state["waiting"]["reason"].as_str().unwrap_or("ContainerCreating").to_string()),
        None => Err("ContainerCreating".to_string()),
    };
    let terminated = state.is_some_and(|s| s.get("terminated").is_some());
    (started, finished || terminated)
}

impl Shared {
    fn requests(&self) -> Vec<Recorded> {
        self.objects.lock().unwrap().requests.clone()
    }

    pub fn object(&self, kind: Kind, name: &str) -> Option<Value> {
        self.objects.lock().unwrap().store.get(&(kind, name.to_string())).cloned()
    }

    /// Creates or replaces an object, as a controller would, and tells the
    /// watches.
    pub fn put(&self, kind: Kind, mut object: Value) {
        let mut objects = self.objects.lock().unwrap();
        let name = object["metadata"]["name"].as_str().unwrap().to_string();
        let existed = objects.store.contains_key(&(kind, name.clone()));
        if object["metadata"]["uid"].is_null() {
            objects.next_uid += 1;
            object["metadata"]["uid"] = json!(format!("00000000-0000-4000-8000-{:012}", objects.next_uid));
        }
        object["metadata"]["namespace"] = json!(NAMESPACE);
        object["apiVersion"] = json!(kind.api_version());
        object["kind"] = json!(kind.kind());
        let kind_name = if existed { "MODIFIED" } else { "ADDED" };
        self.commit(&mut objects, kind, name, object, kind_name);
    }

    /// Changes an object with a JSON merge patch.
    pub fn patch(&self, kind: Kind, name: &str, patch: Value) {
        let mut object = self.object(kind, name).unwrap_or_else(|| panic!("no {kind:?} {name}"));
        merge_patch(&mut object, &patch);
        self.put(kind, object);
    }

    pub fn delete(&self, kind: Kind, name: &str) {
        let mut objects = self.objects.lock().unwrap();
        if let Some(object) = objects.store.remove(&(kind, name.to_string())) {
            self.announce(&mut objects, kind, object, "DELETED");
        }
    }

    fn commit(&self, objects: &mut Objects, kind: Kind, name: String, mut object: Value, change: &str) {
        objects.version += 1;
        object["metadata"]["resourceVersion"] = json!(objects.version.to_string());
        objects.store.insert((kind, name), object.clone());
        self.announce_at(objects, kind, object, change);
    }

    fn announce(&self, objects: &mut Objects, kind: Kind, object: Value, change: &str) {
        objects.version += 1;
        let mut object = object;
        object["metadata"]["resourceVersion"] = json!(objects.version.to_string());
        self.announce_at(objects, kind, object, change);
    }

    fn announce_at(&self, objects: &mut Objects, kind: Kind, object: Value, change: &str) {
        let labels = labels_of(&object);
        let event = Change {
            version: objects.version,
            kind,
            line: format!("{}\n", json!({"type": change, "object": object})),
            labels,
            object,
        };
        objects.history.push(event.clone());
        let _ = self.changes.send(event);
    }
}

fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object["metadata"]["labels"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string())).collect())
        .unwrap_or_default()
}

/// RFC 7386: objects merge key by key, `null` deletes, anything else
/// replaces.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(fields) => {
            if !target.is_object() {
                *target = json!({});
            }
            let map = target.as_object_mut().unwrap();
            for (key, value) in fields {
                if value.is_null() {
                    map.remove(key);
                } else {
                    merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
                }
            }
        }
        other => *target = other.clone(),
    }
}

fn matches_selector(labels: &BTreeMap<String, String>, selector: Option<&String>) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    selector.split(',').filter(|s| !s.is_empty()).all(|term| match term.split_once('=') {
        Some((key, value)) => labels.get(key).map(String::as_str) == Some(value.trim_start_matches('=')),
        None => labels.contains_key(term),
    })
}

/// One term of a field selector: `field=value`, `field==value` or
/// `field!=value`.
#[derive(Debug, Clone)]
struct FieldTerm {
    field: String,
    value: String,
    equal: bool,
}

/// The value of a selectable field, or `Err` when the API server does not
/// let this kind be selected by it (each kind registers its own few
/// fields: `pkg/registry/core/event/strategy.go` for events).
fn field_value(kind: Kind, object: &Value, field: &str) -> Result<String, ()> {
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    match (kind, field) {
        (_, "metadata.name") => Ok(text(&object["metadata"]["name"])),
        (_, "metadata.namespace") => Ok(text(&object["metadata"]["namespace"])),
        (Kind::Event, "involvedObject.kind") => Ok(text(&object["involvedObject"]["kind"])),
        (Kind::Event, "involvedObject.namespace") => Ok(text(&object["involvedObject"]["namespace"])),
        (Kind::Event, "involvedObject.name") => Ok(text(&object["involvedObject"]["name"])),
        (Kind::Event, "involvedObject.uid") => Ok(text(&object["involvedObject"]["uid"])),
        (Kind::Event, "involvedObject.apiVersion") => Ok(text(&object["involvedObject"]["apiVersion"])),
        (Kind::Event, "involvedObject.resourceVersion") => Ok(text(&object["involvedObject"]["resourceVersion"])),
        (Kind::Event, "involvedObject.fieldPath") => Ok(text(&object["involvedObject"]["fieldPath"])),
        (Kind::Event, "reason") => Ok(text(&object["reason"])),
        (Kind::Event, "reportingComponent") => Ok(text(&object["reportingComponent"])),
        (Kind::Event, "source") => Ok(text(&object["source"]["component"])),
        (Kind::Event, "type") => Ok(text(&object["type"])),
        (Kind::Pod, "spec.nodeName") => Ok(text(&object["spec"]["nodeName"])),
        (Kind::Pod, "status.phase") => Ok(text(&object["status"]["phase"])),
        _ => Err(()),
    }
}

/// Parses a field selector, refusing fields the kind cannot be selected by
/// with the API server's answer.
#[allow(clippy::result_large_err, reason = "the error is the HTTP answer itself, sent once")]
fn field_selector(kind: Kind, query: &BTreeMap<String, String>) -> Result<Vec<FieldTerm>, Response> {
    let Some(selector) = query.get("fieldSelector") else {
        return Ok(Vec::new());
    };
    let mut terms = Vec::new();
    for term in selector.split(',').filter(|t| !t.is_empty()) {
        let (field, value, equal) = if let Some((f, v)) = term.split_once("!=") {
            (f, v, false)
        } else if let Some((f, v)) = term.split_once("==") {
            (f, v, true)
        } else if let Some((f, v)) = term.split_once('=') {
            (f, v, true)
        } else {
            return Err(status(400, "BadRequest", format!("invalid field selector: '{term}'")));
        };
        if field_value(kind, &json!({}), field).is_err() {
            return Err(status(400, "BadRequest", format!("field label not supported: {field}")));
        }
        terms.push(FieldTerm { field: field.to_string(), value: value.to_string(), equal });
    }
    Ok(terms)
}

fn matches_fields(kind: Kind, object: &Value, terms: &[FieldTerm]) -> bool {
    terms.iter().all(|t| field_value(kind, object, &t.field).is_ok_and(|v| (v == t.value) == t.equal))
}

fn status(code: u16, reason: &str, message: String) -> Response {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "reason": reason, "code": code
    });
    (StatusCode::from_u16(code).unwrap(), axum::Json(body)).into_response()
}

fn parse_query(query: Option<&str>) -> BTreeMap<String, String> {
    query
        .map(|q| form_urlencoded::parse(q.as_bytes()).map(|(k, v)| (k.into_owned(), v.into_owned())).collect())
        .unwrap_or_default()
}

/// Where a path points: a collection, an object, or a pod's log.
fn route(path: &str) -> Option<(Kind, Option<String>, bool)> {
    let rest = path
        .strip_prefix(&format!("/apis/batch/v1/namespaces/{NAMESPACE}/"))
        .or_else(|| path.strip_prefix(&format!("/apis/networking.k8s.io/v1/namespaces/{NAMESPACE}/")))
        .or_else(|| path.strip_prefix(&format!("/api/v1/namespaces/{NAMESPACE}/")))?;
    let mut parts = rest.split('/');
    let kind = match parts.next()? {
        "jobs" if path.starts_with("/apis/batch/") => Kind::Job,
        "pods" if path.starts_with("/api/v1/") => Kind::Pod,
        "secrets" if path.starts_with("/api/v1/") => Kind::Secret,
        "services" if path.starts_with("/api/v1/") => Kind::Service,
        "events" if path.starts_with("/api/v1/") => Kind::Event,
        "networkpolicies" if path.starts_with("/apis/networking.k8s.io/") => Kind::NetworkPolicy,
        _ => return None,
    };
    let name = parts.next().map(String::from);
    let log = match parts.next() {
        None => false,
        Some("log") if kind == Kind::Pod => true,
        Some(_) => return None,
    };
    if parts.next().is_some() {
        return None;
    }
    Some((kind, name, log))
}

async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let query = parse_query(request.uri().query());
    let content_type = request.headers().get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(String::from);
    let bytes: Bytes = axum::body::to_bytes(request.into_body(), 16 * 1024 * 1024).await.unwrap_or_default();
    let body: Value = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|_| json!(String::from_utf8_lossy(&bytes)))
    };
    {
        let mut objects = shared.objects.lock().unwrap();
        objects.requests.push(Recorded {
            method: method.to_string(),
            path: path.clone(),
            query: query.clone(),
            content_type: content_type.clone(),
            body: body.clone(),
        });
    }
    let metrics_path = format!("/apis/metrics.k8s.io/v1beta1/namespaces/{NAMESPACE}/pods");
    if path == metrics_path && method == Method::GET {
        return FakeRef { shared: shared.clone() }.pod_metrics(&query);
    }
    let Some((kind, name, log)) = route(&path) else {
        return status(404, "NotFound", format!("the server could not find the requested resource ({path})"));
    };
    let fake = FakeRef { shared: shared.clone() };
    match (method, name) {
        (Method::GET, Some(name)) if log => fake.log(&name, &query),
        (Method::GET, None) if query.get("watch").map(String::as_str) == Some("true") => fake.watch(kind, &query),
        (Method::GET, None) => fake.list(kind, &query),
        (Method::GET, Some(name)) => fake.get(kind, &name),
        (Method::POST, None) => fake.create(kind, body),
        (Method::PATCH, Some(name)) => {
            if content_type.as_deref() != Some("application/merge-patch+json") {
                return status(415, "UnsupportedMediaType", format!("unsupported patch type {content_type:?}"));
            }
            fake.patch(kind, &name, body)
        }
        (Method::DELETE, Some(name)) => fake.delete(kind, &name),
        (method, _) => status(405, "MethodNotAllowed", format!("{method} is not supported here")),
    }
}

/// The handler's view of the shared state.
struct FakeRef {
    shared: Arc<Shared>,
}

impl FakeRef {
    fn fake(&self) -> &Shared {
        &self.shared
    }

    /// `metrics.k8s.io/v1beta1` `PodMetricsList` of the running pods the
    /// label selector selects, as metrics-server answers: one entry per pod
    /// with a `window`, a `timestamp` and each container's `usage`.
    fn pod_metrics(&self, query: &BTreeMap<String, String>) -> Response {
        let objects = self.shared.objects.lock().unwrap();
        let Some(usage) = &objects.pod_usage else {
            return status(404, "NotFound", "the server could not find the requested resource".into());
        };
        let selector = query.get("labelSelector");
        let items: Vec<Value> = objects
            .store
            .iter()
            .filter(|((k, _), o)| {
                *k == Kind::Pod && matches_selector(&labels_of(o), selector) && o["status"]["phase"] == "Running"
            })
            .filter_map(|((_, name), o)| {
                let (cpu, memory) = usage.get(name)?;
                Some(json!({
                    "metadata": {"name": name, "namespace": NAMESPACE, "labels": o["metadata"]["labels"].clone()},
                    "timestamp": "2026-01-01T00:00:00Z",
                    "window": "15s",
                    "containers": [{"name": "main", "usage": {"cpu": cpu, "memory": memory}}]
                }))
            })
            .collect();
        axum::Json(
            json!({"kind": "PodMetricsList", "apiVersion": "metrics.k8s.io/v1beta1", "metadata": {}, "items": items}),
        )
        .into_response()
    }

    fn list(&self, kind: Kind, query: &BTreeMap<String, String>) -> Response {
        let fields = match field_selector(kind, query) {
            Ok(fields) => fields,
            Err(refused) => return refused,
        };
        let objects = self.shared.objects.lock().unwrap();
        let selector = query.get("labelSelector");
        let items: Vec<Value> = objects
            .store
            .iter()
            .filter(|((k, _), o)| {
                *k == kind && matches_selector(&labels_of(o), selector) && matches_fields(kind, o, &fields)
            })
            .map(|(_, o)| {
                // List items carry no apiVersion/kind, as the API server's.
                let mut item = o.clone();
                item.as_object_mut().unwrap().remove("apiVersion");
                item.as_object_mut().unwrap().remove("kind");
                item
            })
            .collect();
        axum::Json(json!({
            "kind": format!("{}List", kind.kind()),
            "apiVersion": kind.api_version(),
            "metadata": {"resourceVersion": objects.version.to_string()},
            "items": items
        }))
        .into_response()
    }

    fn get(&self, kind: Kind, name: &str) -> Response {
        let objects = self.shared.objects.lock().unwrap();
        match objects.store.get(&(kind, name.to_string())) {
            Some(object) => axum::Json(object.clone()).into_response(),
            None => not_found(kind, name),
        }
    }

    fn create(&self, kind: Kind, mut body: Value) -> Response {
        let Some(name) = body["metadata"]["name"].as_str().map(String::from) else {
            return status(422, "Invalid", "metadata.name: Required value".into());
        };
        if body["metadata"]["namespace"].as_str().is_some_and(|ns| ns != NAMESPACE) {
            return status(400, "BadRequest", "the namespace of the object does not match the request".into());
        }
        if self.shared.objects.lock().unwrap().store.contains_key(&(kind, name.clone())) {
            return status(
                409,
                "AlreadyExists",
                format!("{}{} \"{name}\" already exists", kind.plural(), dot(kind.group())),
            );
        }
        body["metadata"]["creationTimestamp"] = json!("2026-01-10T10:00:00Z");
        if kind == Kind::Secret {
            // The API server folds the write-only stringData into data.
            if let Some(string_data) = body.as_object_mut().unwrap().remove("stringData") {
                use base64::Engine as _;
                let data = body["data"].as_object().cloned().unwrap_or_default();
                let mut data = data;
                for (k, v) in string_data.as_object().unwrap() {
                    data.insert(
                        k.clone(),
                        json!(base64::engine::general_purpose::STANDARD.encode(v.as_str().unwrap_or(""))),
                    );
                }
                body["data"] = Value::Object(data);
            }
        }
        if kind == Kind::Job {
            body["status"] = json!({});
        }
        let fake = self.fake();
        fake.put(kind, body);
        let created = fake.object(kind, &name).unwrap();
        (StatusCode::CREATED, axum::Json(created)).into_response()
    }

    fn patch(&self, kind: Kind, name: &str, patch: Value) -> Response {
        let fake = self.fake();
        if fake.object(kind, name).is_none() {
            return not_found(kind, name);
        }
        fake.patch(kind, name, patch);
        axum::Json(fake.object(kind, name).unwrap()).into_response()
    }

    fn delete(&self, kind: Kind, name: &str) -> Response {
        let fake = self.fake();
        let Some(object) = fake.object(kind, name) else {
            return not_found(kind, name);
        };
        fake.delete(kind, name);
        axum::Json(object).into_response()
    }

    fn log(&self, pod: &str, query: &BTreeMap<String, String>) -> Response {
        let flag = |name: &str| query.get(name).map(String::as_str) == Some("true");
        let (follow, timestamps) = (flag("follow"), flag("timestamps"));
        // The API server hands the kubelet `sinceTime` at whole seconds.
        let since: Option<i128> = match query.get("sinceTime") {
            Some(text) => match text.parse::<k8s_openapi::jiff::Timestamp>() {
                Ok(time) => Some(i128::from(time.as_second()) * 1_000_000_000),
                Err(_) => return status(400, "BadRequest", format!("sinceTime: invalid value {text:?}")),
            },
            None => None,
        };
        let generation = {
            let objects = self.shared.objects.lock().unwrap();
            let Some(object) = objects.store.get(&(Kind::Pod, pod.to_string())) else {
                return not_found(Kind::Pod, pod);
            };
            if let Some(container) = query.get("container") {
                let known = object["spec"]["containers"]
                    .as_array()
                    .is_some_and(|all| all.iter().any(|c| c["name"].as_str() == Some(container.as_str())));
                if !known {
                    return status(400, "BadRequest", format!("container {container} is not valid for pod {pod}"));
                }
            }
            if object["spec"]["nodeName"].as_str().unwrap_or("").is_empty() {
                return status(400, "BadRequest", format!("pod {pod} does not have a host assigned"));
            }
            if let (Err(reason), _) = container_state(object) {
                return status(
                    400,
                    "BadRequest",
                    format!("container \"job\" in pod \"{pod}\" is waiting to start: {reason}"),
                );
            }
            objects.log_generation
        };
        struct Cursor {
            shared: Arc<Shared>,
            pod: String,
            next: usize,
            pending: std::collections::VecDeque<Bytes>,
            done: bool,
        }
        let cursor = Cursor {
            shared: self.shared.clone(),
            pod: pod.to_string(),
            next: 0,
            pending: Default::default(),
            done: false,
        };
        let stream = futures_util::stream::unfold(cursor, move |mut cursor| async move {
            loop {
                if cursor.done {
                    return None;
                }
                // What to do next, decided under the lock (which a stream
                // must not hold across an await).
                enum Next {
                    Cut,
                    Send(Bytes),
                    Read(Vec<LogEntry>, bool),
                }
                let next = {
                    let mut objects = cursor.shared.objects.lock().unwrap();
                    if objects.log_generation != generation {
                        Next::Cut
                    } else if let Some(chunk) = cursor.pending.pop_front() {
                        *objects.log_bytes_sent.entry(cursor.pod.clone()).or_default() += chunk.len();
                        Next::Send(chunk)
                    } else {
                        let log = objects.logs.get(&cursor.pod).cloned().unwrap_or_default();
                        let entries: Vec<LogEntry> = log.get(cursor.next..).unwrap_or_default().to_vec();
                        let running = objects
                            .store
                            .get(&(Kind::Pod, cursor.pod.clone()))
                            .is_some_and(|pod| !container_state(pod).1);
                        Next::Read(entries, running)
                    }
                };
                let (entries, running) = match next {
                    Next::Cut => {
                        cursor.done = true;
                        let cut =
                            std::io::Error::new(std::io::ErrorKind::ConnectionReset, "the fake cut the log stream");
                        return Some((Err(cut), cursor));
                    }
                    Next::Send(chunk) => {
                        // Sent in small pieces, as a followed log arrives,
                        // split mid-line.
                        tokio::time::sleep(Duration::from_millis(2)).await;
                        return Some((Ok(chunk), cursor));
                    }
                    Next::Read(entries, running) => (entries, running),
                };
                cursor.next += entries.len();
                let mut text = String::new();
                for entry in entries.iter().filter(|e| since.is_none_or(|since| e.time >= since)) {
                    if timestamps {
                        text.push_str(&kubelet_time(entry.time));
                        text.push(' ');
                    }
                    text.push_str(&entry.text);
                    text.push('\n');
                }
                if !text.is_empty() {
                    cursor.pending.extend(text.as_bytes().chunks(7).map(Bytes::copy_from_slice));
                    continue;
                }
                // Everything written so far was sent: the kubelet ends the
                // stream unless it follows a container that still runs.
                if !follow || !running {
                    return None;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        Response::builder().header(header::CONTENT_TYPE, "text/plain").body(Body::from_stream(stream)).unwrap()
    }

    /// A watch from `resourceVersion`: the changes after it, then the live
    /// ones, until `timeoutSeconds`.
    fn watch(&self, kind: Kind, query: &BTreeMap<String, String>) -> Response {
        let fields = match field_selector(kind, query) {
            Ok(fields) => fields,
            Err(refused) => return refused,
        };
        let from: u64 = query.get("resourceVersion").and_then(|v| v.parse().ok()).unwrap_or(0);
        let selector = query.get("labelSelector").cloned();
        let timeout: u64 = query.get("timeoutSeconds").and_then(|v| v.parse().ok()).unwrap_or(290);
        let (backlog, live, at) = {
            let objects = self.shared.objects.lock().unwrap();
            let live = self.shared.changes.subscribe();
            let backlog: Vec<Change> = objects.history.iter().filter(|c| c.version > from).cloned().collect();
            (backlog, live, objects.version)
        };
        let guard = {
            let mut watches = self.shared.watches.lock().unwrap();
            watches.next_id += 1;
            watches.opened += 1;
            let id = watches.next_id;
            watches.open.insert(id, (kind, from));
            Arc::new(WatchGuard { shared: self.shared.clone(), id })
        };
        let last_backlog = backlog.last().map(|c| c.version).unwrap_or(from);
        let wanted = move |c: &Change| {
            c.kind == kind && matches_selector(&c.labels, selector.as_ref()) && matches_fields(kind, &c.object, &fields)
        };
        let wanted_live = wanted.clone();
        // The backlog, then a mark that the watch is past what the cluster
        // held when it opened, then the live changes; the guard rides with
        // the stream and ends the watch's entry when it is dropped.
        let backlog_guard = guard.clone();
        let backlog = futures_util::stream::iter(backlog.into_iter().filter(wanted).map(Some))
            .chain(futures_util::stream::once(async move {
                backlog_guard.passed(at);
                None
            }))
            .filter_map(std::future::ready);
        let live_guard = guard.clone();
        let live = tokio_stream_from(live).filter(move |c| {
            let send = c.version > last_backlog && wanted_live(c);
            if !send {
                live_guard.passed(c.version);
            }
            std::future::ready(send)
        });
        let stream = backlog
            .chain(live)
            .map(move |c| {
                // A change is past once it is handed to the connection.
                guard.passed(c.version);
                Ok::<Bytes, std::io::Error>(Bytes::from(c.line))
            })
            .take_until(tokio::time::sleep(Duration::from_secs(timeout)));
        Response::builder().header(header::CONTENT_TYPE, "application/json").body(Body::from_stream(stream)).unwrap()
    }
}

/// A broadcast receiver as a stream (lagging receivers skip ahead).
fn tokio_stream_from(mut rx: broadcast::Receiver<Change>) -> impl futures_util::Stream<Item = Change> {
    async_stream(move |tx| async move {
        loop {
            match rx.recv().await {
                Ok(change) => {
                    if tx.send(change).is_err() {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    })
}

/// A stream fed by a task through an unbounded channel.
fn async_stream<F, Fut>(producer: F) -> impl futures_util::Stream<Item = Change>
where
    F: FnOnce(tokio::sync::mpsc::UnboundedSender<Change>) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    tokio::spawn(producer(tx));
    futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|c| (c, rx)) })
}

fn dot(group: &str) -> String {
    if group.is_empty() {
        String::new()
    } else {
        format!(".{group}")
    }
}

fn not_found(kind: Kind, name: &str) -> Response {
    status(404, "NotFound", format!("{}{} \"{name}\" not found", kind.plural(), dot(kind.group())))
}
